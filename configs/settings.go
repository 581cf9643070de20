package configs

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Redacted stands for a secret's value wherever chime shows a setting (the
// API, the CLI, logs): secrets can be set, never read back.
const Redacted = "********"

// Bounds past which a value is refused: each is far beyond any sensible
// setting, and below the point where the value breaks something (a
// retention that overflows time.Duration and deletes every finished job, a
// pool whose buffers cannot be allocated).
const (
	MaxRetentionDays = 36500 // 100 years; cluster.MaxRetentionDays says the same
	MaxPoolSize      = 10000
	MaxBacklog       = 100000
	MaxBatchSize     = 10000
	MaxFireAllCap    = 100000
)

// secretKeys hold credentials. database.dsn may carry a password too.
var secretKeys = []string{"smtp.password", "api.token", "database.dsn", "secrets.key", "secrets.old_keys"}

// liveKeys take effect on a running node when their configurations row
// changes (app's watcher); every other key is read once, at start.
var liveKeys = []string{
	"log.level",
	"taskengine.pool_size", "taskengine.poll_interval",
	"retention_days",
	"smtp.host", "smtp.port", "smtp.username", "smtp.password", "smtp.from", "smtp.tls",
}

// fileOnlySections are set only by the file or the environment: who this
// node is, where its database is, and who may call its API must not be
// changeable by whoever can write one table row.
var fileOnlySections = []string{"node", "api", "database", "secrets"}

// IsSecret reports whether name's value must never be shown: a key that
// holds a credential, or any other row whose name says it holds one (the
// table may hold rows written by plain SQL under any name).
func IsSecret(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	if slices.Contains(secretKeys, n) {
		return true
	}
	for _, w := range []string{"password", "passwd", "secret", "token", "credential", "dsn"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactValue returns value, or Redacted when name is secret and value is
// not empty (that a secret is unset is no secret).
func RedactValue(name, value string) string {
	if value != "" && IsSecret(name) {
		return Redacted
	}
	return value
}

// IsLive reports whether a change to key takes effect without a restart.
func IsLive(key string) bool { return slices.Contains(liveKeys, key) }

// IsFileOnly reports whether key may be set only by the file or environment.
func IsFileOnly(key string) bool {
	section, _, _ := strings.Cut(key, ".")
	return slices.Contains(fileOnlySections, section) && slices.Contains(Keys(), key)
}

// SettingError is a configurations row refused, with the reason. Its text
// never holds a secret's value.
type SettingError struct {
	Key    string
	Value  string // as given; Error shows it only when the key is not secret
	Reason string
	// Unknown is set when Key is no configuration key; Suggestions then
	// lists the closest keys.
	Unknown     bool
	Suggestions []string
}

func (e *SettingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", e.Key)
	if !e.Unknown {
		fmt.Fprintf(&b, " = %s", quoteValue(e.Key, e.Value))
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	if len(e.Suggestions) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", strings.Join(e.Suggestions, ", "))
	}
	return b.String()
}

// quoteValue shows a value in a message: redacted when secret, quoted (so
// control characters cannot forge log lines) and cut when long.
func quoteValue(key, v string) string {
	if IsSecret(key) && v != "" {
		return Redacted
	}
	const max = 80
	if len(v) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", v[:cut])
	}
	return fmt.Sprintf("%q", v)
}

// CheckSetting refuses a row the table must not hold: an unknown key (with
// the closest keys), a key only the file or environment may set, or a value
// that does not parse or that the node would refuse at start on top of c.
// A key pinned on this node (by an environment variable or a flag) is
// checked all the same: other nodes may not pin it.
func (c *Config) CheckSetting(key, value string) *SettingError {
	cand := c.clone()
	cand.pinned = nil
	err, _ := cand.apply(strings.TrimSpace(key), value)
	return err
}

// WithSettings returns a copy of c with the configurations rows applied
// (name → value), and the rows it refused. A refused row changes nothing:
// the value c had stays. Keys the environment set (or Pin pinned) keep
// their value whatever the rows say, since an operator set them for this
// process on purpose. The result always passes validation.
//
// Rows are applied in name order, then refused ones are retried until none
// more can be applied, so two rows that are only valid together (a longer
// cluster.failover_after with a longer cluster.heartbeat) both apply.
func (c *Config) WithSettings(rows map[string]string) (*Config, []*SettingError) {
	out := c.clone()
	names := make([]string, 0, len(rows))
	for name := range rows {
		names = append(names, name)
	}
	sort.Strings(names)
	refused := map[string]*SettingError{}
	pending := names
	for {
		var next []string
		progress := false
		for _, name := range pending {
			key := strings.TrimSpace(name)
			if out.pinned[key] {
				// The environment or a flag wins; a row no node may
				// hold (node.id, a bad value) is still reported.
				if err, retry := out.clone().apply(key, rows[name]); err != nil && !retry {
					refused[name] = err
				}
				continue
			}
			cand := out.clone()
			if err, retry := cand.apply(key, rows[name]); err != nil {
				refused[name] = err
				if retry {
					next = append(next, name)
				}
				continue
			}
			delete(refused, name)
			out = cand
			progress = true
		}
		if !progress || len(next) == 0 {
			break
		}
		pending = next
	}
	errs := make([]*SettingError, 0, len(refused))
	for _, name := range names {
		if e, ok := refused[name]; ok {
			errs = append(errs, e)
		}
	}
	return out, errs
}

// apply sets key on c and validates the whole of c. retry says whether
// another row could make the value valid (a check across keys failed).
func (c *Config) apply(key, value string) (err *SettingError, retry bool) {
	fail := func(reason string, args ...any) *SettingError {
		return &SettingError{Key: key, Value: value, Reason: fmt.Sprintf(reason, args...)}
	}
	fv, ok := field(reflect.ValueOf(c).Elem(), strings.Split(key, "."))
	if !ok {
		e := fail("not a configuration key")
		e.Unknown = true
		e.Suggestions = Suggest(key)
		return e, false
	}
	if IsFileOnly(key) {
		return fail("can be set only in the configuration file or by %s, not by a configurations row", EnvName(key)), false
	}
	if err := setValue(fv, value); err != nil {
		return fail("%v", err), false
	}
	if ps := c.problems(); len(ps) > 0 {
		// c was valid before, so the problem comes from this value, alone
		// or together with another key's.
		p := ps[0]
		if p.key != key {
			return fail("%s: %s", p.key, p.msg), true
		}
		return fail("%s", p.msg), true
	}
	return nil, false
}

// Pin marks keys as set on purpose for this process (by a command-line
// flag): configurations rows no longer change them.
func (c *Config) Pin(keys ...string) {
	p := make(map[string]bool, len(c.pinned)+len(keys))
	for k := range c.pinned {
		p[k] = true
	}
	for _, k := range keys {
		p[k] = true
	}
	c.pinned = p
}

// Pinned reports whether rows cannot change key on this node.
func (c *Config) Pinned(key string) bool { return c.pinned[key] }

func (c *Config) clone() *Config {
	cp := *c
	return &cp
}

// Suggest returns up to three keys close to name, closest first: keys a
// few edits away once case, "_" and "-" are ignored (taskengine.poolsize →
// taskengine.pool_size), and keys whose last part matches (pool_size →
// taskengine.pool_size).
func Suggest(name string) []string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	}
	n := norm(name)
	_, nLeaf := cutLast(n)
	type cand struct {
		key  string
		dist int
	}
	var cands []cand
	for _, k := range Keys() {
		nk := norm(k)
		limit := min(max(2, len(nk)/8), 4)
		d := editDistance(n, nk, limit)
		_, leaf := cutLast(nk)
		switch {
		case d <= limit:
		case leaf == nLeaf || leaf == n:
			d = 3
		default:
			continue
		}
		cands = append(cands, cand{k, d})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].dist < cands[j].dist })
	var out []string
	for _, c := range cands {
		if len(out) == 3 {
			break
		}
		out = append(out, c.key)
	}
	return out
}

func cutLast(s string) (string, string) {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// editDistance is Levenshtein's distance between a and b, or limit+1 once
// it is known to exceed limit (names from the table can be long).
func editDistance(a, b string, limit int) int {
	if abs(len(a)-len(b)) > limit {
		return limit + 1
	}
	if len(a) > 200 || len(b) > 200 {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Value returns key's value in the form a row or the environment writes it
// ("4s", "16", "true"), and whether key is a configuration key.
func (c *Config) Value(key string) (string, bool) {
	fv, ok := field(reflect.ValueOf(c).Elem(), strings.Split(key, "."))
	if !ok {
		return "", false
	}
	if fv.Type() == reflect.TypeOf(Duration(0)) {
		return time.Duration(fv.Int()).String(), true
	}
	return fmt.Sprint(fv.Interface()), true
}
