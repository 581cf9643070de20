package chimedb_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The seam exists so that everything but app (which wires a store in),
// store itself and the CLI builds without the ORM, the SQL drivers and the
// migration tool, and reaches chime's database only through chimedb; an
// import of store (or of gorm directly) would bring them all back without
// failing any build.
func TestSeamHasNoDrivers(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	forbidden := []string{"gorm.io/", "github.com/go-sql-driver/", "github.com/mattn/go-sqlite3", "modernc.org/sqlite",
		"github.com/glebarez/", "github.com/jackc/", "github.com/lib/pq", "github.com/pressly/goose", "github.com/chimesched/chime/store"}
	for _, c := range []struct {
		pkgs []string
		// allowed are forbidden prefixes these packages may depend on, and why.
		allowed []string
		// also are further packages they must not depend on.
		also []string
	}{
		{pkgs: []string{"chimedb", "scheduleengine", "taskengine", "cluster", "api", "console"}},
		// The rules of every door: no door of their own.
		{pkgs: []string{"validate"}, also: []string{"github.com/chimesched/chime/api"}},
		// The importer reads a Quartz store, a MySQL database of its own,
		// with the MySQL driver; chime's database it reaches through
		// chimedb, and its rules come from validate, not from the API.
		{pkgs: []string{"quartzimport"}, allowed: []string{"github.com/go-sql-driver/"}, also: []string{"github.com/chimesched/chime/api"}},
	} {
		args := []string{"list", "-deps"}
		for _, p := range c.pkgs {
			args = append(args, "github.com/chimesched/chime/"+p)
		}
		out, err := exec.Command(goBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range append(slices.Clone(forbidden), c.also...) {
				if strings.HasPrefix(dep, f) && !slices.Contains(c.allowed, f) {
					t.Errorf("%v depend on %s", c.pkgs, dep)
				}
			}
		}
	}
}
