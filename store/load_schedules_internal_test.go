package store

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"

	"github.com/chimesched/chime/models"
)

// LoadSchedules and definitionsByID scan fixed lists of columns with
// database/sql; a column a model gains (a priority, say) must be added
// there too, or the engine would see it zero on every row.
func TestLoadColumnsCoverModels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		model any
		cols  []string
	}{{&models.Schedule{}, loadScheduleColumns}, {&models.TimeTrigger{}, loadTriggerColumns}, {&models.JobDefinition{}, loadDefinitionColumns}} {
		s, err := schema.Parse(c.model, &sync.Map{}, schema.NamingStrategy{})
		require.NoError(t, err)
		var want []string
		for _, f := range s.Fields {
			if f.DBName != "" {
				want = append(want, f.DBName)
			}
		}
		slices.Sort(want)
		got := slices.Sorted(slices.Values(c.cols))
		require.Equal(t, want, got, "LoadSchedules reads every column of %s", s.Table)
	}
}

// definitionDest scans into as many fields as definitionsByID reads columns.
func TestDefinitionDestMatchesColumns(t *testing.T) {
	t.Parallel()
	require.Len(t, definitionDest(&models.JobDefinition{}), len(loadDefinitionColumns))
}
