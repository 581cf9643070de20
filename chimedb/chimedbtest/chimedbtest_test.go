package chimedbtest_test

import (
	"slices"
	"testing"

	"github.com/chimesched/chime/chimedb/chimedbtest"
)

// A method added to an interface of chimedb without cases here would let
// a store pass the suite without it: the suite must name every method.
func TestSuiteCoversEveryMethod(t *testing.T) {
	t.Parallel()
	declared, covered := chimedbtest.Declared(), chimedbtest.Covered()
	for _, m := range declared {
		if !slices.Contains(covered, m) {
			t.Errorf("%s has no cases in chimedbtest", m)
		}
	}
	for _, m := range covered {
		if !slices.Contains(declared, m) {
			t.Errorf("chimedbtest has cases for %s, which chimedb does not declare", m)
		}
	}
}
