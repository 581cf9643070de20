package configs

import (
	"slices"
	"sort"
	"strings"
)

// otherEnv are the CHIME_* variables chime reads that are no configuration
// key: the CLI's, and those of tests and benchmarks (and of the child
// processes tests start). otherEnvPrefixes are families of test variables
// (CHIME_HA_ and CHIME_GALERA_: the ports of scripts/ha/).
// UnknownEnv reports every other CHIME_* variable; a test checks that the
// code reads no name missing here.
var (
	otherEnv = []string{
		"CHIME_API_URL", "CHIME_API_CA_CERT", // cli: where the admin commands find the API
		"CHIME_TASKENGINE_CRASH_CHILD", "CHIME_TASKENGINE_CRASH_DRIVER", "CHIME_TASKENGINE_CRASH_DSN",
		"CHIME_SCHEDULEENGINE_CHILD_NODE", "CHIME_SCHEDULEENGINE_CHILD_DRIVER", "CHIME_SCHEDULEENGINE_CHILD_DSN",
	}
	otherEnvPrefixes = []string{"CHIME_TEST_", "CHIME_BENCH_", "CHIME_CLUSTERTEST_", "CHIME_CONSOLE_", "CHIME_HA_", "CHIME_GALERA_"}
)

// EnvWarning is a CHIME_* variable chime does not read, most likely a
// misspelt one: chime ignores it.
type EnvWarning struct {
	Name string
	// Suggestions are the close variables chime reads, closest first.
	Suggestions []string
}

// String says it without the variable's value, which may be a secret.
func (w EnvWarning) String() string {
	s := w.Name + " is not a variable chime reads: ignored"
	if len(w.Suggestions) > 0 {
		s += "; did you mean " + strings.Join(w.Suggestions, ", ") + "?"
	}
	return s
}

// UnknownEnv returns the variables of environ (NAME=value, as os.Environ
// gives them) that start with CHIME_, in any case, and that chime does not
// read, in name order, each with the close matches that a configurations
// row of that name would get (see Suggest).
func UnknownEnv(environ []string) []EnvWarning {
	known := map[string]bool{}
	for _, k := range Keys() {
		known[EnvName(k)] = true
	}
	for _, n := range otherEnv {
		known[n] = true
	}
	seen := map[string]bool{}
	var out []EnvWarning
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, EnvPrefix) || known[name] || seen[name] {
			continue
		}
		if slices.ContainsFunc(otherEnvPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		seen[name] = true
		out = append(out, EnvWarning{Name: name, Suggestions: suggestEnv(upper)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// suggestEnv finds the variables close to name (upper case): the keys
// Suggest finds for the key name would stand for, and the other variables
// a couple of edits away.
func suggestEnv(name string) []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) && len(out) < 3 {
			out = append(out, n)
		}
	}
	if slices.Contains(otherEnv, name) {
		add(name) // the right name in the wrong case
	}
	for _, k := range Suggest(envKey(name)) {
		add(EnvName(k))
	}
	norm := strings.NewReplacer("_", "").Replace
	for _, n := range otherEnv {
		if editDistance(norm(name), norm(n), 2) <= 2 {
			add(n)
		}
	}
	return out
}

// envKey turns a variable name back into the key path it would set when
// its first part names a section (CHIME_TASKENGINE_POOLSIZE →
// taskengine.poolsize), so that Suggest compares like with like; the
// rest stays as it is ("_" and "." weigh alike there).
func envKey(name string) string {
	rest := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
	for _, k := range Keys() {
		if section, _, ok := strings.Cut(k, "."); ok {
			if after, found := strings.CutPrefix(rest, section+"_"); found {
				return section + "." + after
			}
		}
	}
	return rest
}
