package chimedb_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The seam exists so that the engines, the cluster node and the API build without
// the ORM, the SQL drivers and the migration tool; an import of store (or
// of gorm directly) would bring them all back without failing any build.
func TestSeamHasNoDrivers(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	pkgs := []string{"chimedb", "scheduleengine", "taskengine", "cluster", "api"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/chimesched/chime/"+p)
	}
	out, err := exec.Command(goBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"gorm.io/", "github.com/go-sql-driver/", "github.com/mattn/go-sqlite3", "modernc.org/sqlite",
		"github.com/glebarez/", "github.com/jackc/", "github.com/lib/pq", "github.com/pressly/goose", "github.com/chimesched/chime/store"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("%v depend on %s", pkgs, dep)
			}
		}
	}
}
