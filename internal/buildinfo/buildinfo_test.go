package buildinfo

import (
	"io/fs"
	"path"
	"runtime"
	"strconv"
	"strings"
	"testing"

	chimesql "github.com/chimesched/chime/sql"
)

// Every dialect reaches the same schema number, the one KnownSchema
// reports: a node's refusal to start against a newer schema compares one
// number whatever the database.
func TestKnownSchemaIsEachDialectsNewest(t *testing.T) {
	for _, dialect := range []string{"mysql", "postgres", "sqlite"} {
		entries, err := fs.ReadDir(chimesql.Migrations, dialect)
		if err != nil {
			t.Fatal(err)
		}
		var top int64
		for _, e := range entries {
			num, _, _ := strings.Cut(e.Name(), "_")
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil || path.Ext(e.Name()) != ".sql" {
				t.Fatalf("%s/%s: not a numbered migration", dialect, e.Name())
			}
			top = max(top, v)
		}
		if top != KnownSchema() {
			t.Errorf("%s: newest migration %d, KnownSchema %d", dialect, top, KnownSchema())
		}
	}
	if KnownSchema() < 16 {
		t.Errorf("KnownSchema %d: below the 16 migrations v0.1.0 shipped", KnownSchema())
	}
}

// Values set by -ldflags win over the binary's VCS stamp; without them the
// version is "dev", never empty.
func TestReadPrefersLdflags(t *testing.T) {
	in := read("v9.8.7", "0123456789abcdef", "2030-01-02T03:04:05Z")
	if in.Version != "v9.8.7" || in.Commit != "0123456789abcdef" || in.Date != "2030-01-02T03:04:05Z" || in.Modified {
		t.Errorf("read with ldflags values: %+v", in)
	}
	if in.GoVersion != runtime.Version() || in.Schema != KnownSchema() {
		t.Errorf("read: go %q schema %d", in.GoVersion, in.Schema)
	}
	if got := in.Short(); got != "v9.8.7 (0123456, schema "+strconv.FormatInt(KnownSchema(), 10)+")" {
		t.Errorf("Short: %q", got)
	}
	if !strings.HasPrefix(in.String(), "chime v9.8.7\ncommit: 0123456789abcdef\nbuilt: 2030-01-02T03:04:05Z\n") {
		t.Errorf("String: %q", in.String())
	}
	if v := read("", "", "").Version; v != "dev" {
		t.Errorf("no version set: %q, want dev (a test binary carries no release version)", v)
	}
}
