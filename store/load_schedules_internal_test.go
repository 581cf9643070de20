package store

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"

	"github.com/chimesched/chime/models"
)

// LoadSchedules scans a fixed list of columns with database/sql; a column
// a model gains (a priority, say) must be added there too, or the engine
// would see it zero on every schedule.
func TestLoadColumnsCoverModels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		model any
		cols  []string
	}{{&models.Schedule{}, loadScheduleColumns}, {&models.TimeTrigger{}, loadTriggerColumns}} {
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

// definitionsByID reads every column of job_definitions, or the engines
// would see one zero.
func TestDefinitionColumnsCoverModel(t *testing.T) {
	t.Parallel()
	s, err := schema.Parse(&models.JobDefinition{}, &sync.Map{}, schema.NamingStrategy{})
	require.NoError(t, err)
	var want []string
	for _, f := range s.Fields {
		if f.DBName != "" {
			want = append(want, f.DBName)
		}
	}
	slices.Sort(want)
	require.Equal(t, want, slices.Sorted(slices.Values(loadDefinitionColumns)))
	require.Len(t, definitionDest(&models.JobDefinition{}), len(loadDefinitionColumns))
}
