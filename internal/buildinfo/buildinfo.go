// Package buildinfo says which chime this binary is: its version, the
// commit and date it was built from, the Go release that built it and the
// schema version its embedded migrations reach. `chime version`, the API's
// /api/v1/version, the console's footer, the nodes table and the refusal to
// start against a newer schema all read it from here, so they cannot
// disagree.
//
// The version, commit and date come from -ldflags when a release build sets
// them (see Version), else from the VCS stamp `go build` records in the
// binary (runtime/debug.BuildInfo's vcs.revision, vcs.time, vcs.modified).
//
// buildinfo imports only the standard library and chime's sql package.
package buildinfo

import (
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	chimesql "github.com/chimesched/chime/sql"
)

// Set at build time by a release build, e.g.
//
//	go build -ldflags "-X github.com/chimesched/chime/internal/buildinfo.Version=v0.2.0
//	  -X github.com/chimesched/chime/internal/buildinfo.Commit=$(git rev-parse HEAD)
//	  -X github.com/chimesched/chime/internal/buildinfo.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/chime
//
// Left empty, Commit and Date come from the binary's VCS stamp, and
// Version is "dev" (or the module version of a `go install ...@vX.Y.Z`).
var (
	Version string
	Commit  string
	Date    string
)

// Info is one binary's identity.
type Info struct {
	// Version is a semantic version such as v0.1.0, or "dev" for a build
	// that no release stamped.
	Version string `json:"version"`
	// Commit is the git commit it was built from ("" when unknown).
	Commit string `json:"commit"`
	// Modified is true when the work tree had changes that commit lacks.
	Modified bool `json:"modified"`
	// Date is when it was built (a release) or its commit's time (a plain
	// `go build` in a git checkout), RFC 3339; "" when unknown.
	Date string `json:"build_date"`
	// GoVersion is the Go release that built it.
	GoVersion string `json:"go_version"`
	// Schema is the highest migration version embedded in the binary: the
	// newest schema this binary knows.
	Schema int64 `json:"schema_version"`
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's Info. The version setters above are read once,
// at the first call.
func Get() Info {
	once.Do(func() { info = read(Version, Commit, Date) })
	return info
}

func read(version, commit, date string) Info {
	in := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Schema: KnownSchema()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			// `go install github.com/chimesched/chime/cmd/chime@v0.2.0`
			// stamps the module's version; a VCS pseudo-version is not a
			// release and stays "dev".
			if !strings.Contains(bi.Main.Version, "-0.") && !strings.Contains(bi.Main.Version, "+dirty") {
				in.Version = bi.Main.Version
			}
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.Date == "" {
					in.Date = s.Value
				}
			case "vcs.modified":
				// Only the stamp knows this; a commit set by -ldflags
				// came from a release script that built a clean tree.
				if commit == "" {
					in.Modified = s.Value == "true"
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	return in
}

// Short is the one-line form the console's footer and the nodes table
// show: "v0.1.0 (68a52d1, schema 16)".
func (in Info) Short() string {
	c := in.Commit
	if len(c) > 7 {
		c = c[:7]
	}
	if c == "" {
		c = "commit unknown"
	}
	if in.Modified {
		c += "+modified"
	}
	return fmt.Sprintf("%s (%s, schema %d)", in.Version, c, in.Schema)
}

// String is the multi-line form `chime version` prints.
func (in Info) String() string {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	commit := orUnknown(in.Commit)
	if in.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("chime %s\ncommit: %s\nbuilt: %s\ngo: %s\nschema: %d\n",
		in.Version, commit, orUnknown(in.Date), in.GoVersion, in.Schema)
}

// KnownSchema is the highest migration version embedded for any dialect
// (the dialects keep the same numbers: sql's tests hold them to it).
func KnownSchema() int64 {
	var top int64
	_ = fs.WalkDir(chimesql.Migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".sql" {
			return nil
		}
		num, _, _ := strings.Cut(path.Base(p), "_")
		if v, err := strconv.ParseInt(num, 10, 64); err == nil && v > top {
			top = v
		}
		return nil
	})
	return top
}
