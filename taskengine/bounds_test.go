package taskengine

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A definition whose timeout_seconds or retry_backoff_seconds an admin set
// out of its models.Bound by SQL (SQLite's INTEGER takes any int64) cannot
// be run: its jobs fail before starting, with the column named, and the
// node's other jobs run. 9223372037 s of backoff wrapped to a negative
// duration, "retry in 0s"; of timeout, to no timeout at all.
func TestDefinitionOutOfBoundsFailsItsJobs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		good := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "good"}).ID
		type bad struct {
			id     int64
			column string
		}
		var bads []bad
		for _, col := range []string{"timeout_seconds", "retry_backoff_seconds"} {
			for _, v := range []int64{9223372037, math.MaxInt64, math.MinInt64, -1, math.MaxInt32 + 1} {
				id := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: fmt.Sprintf("%s=%d", col, v), MaxAttempts: 3}).ID
				if err := db.Exec("UPDATE job_definitions SET "+col+" = ? WHERE id = ?", v, id).Error; err != nil {
					continue // the column's type refuses it: INT on MariaDB and PostgreSQL
				}
				var stored int64
				require.NoError(t, db.Raw("SELECT "+col+" FROM job_definitions WHERE id = ?", id).Scan(&stored).Error)
				if stored >= 0 && stored <= models.MaxSeconds {
					continue // clamped into range by the server
				}
				bads = append(bads, bad{id, col})
			}
		}
		if st.Dialect() == store.SQLite {
			require.Len(t, bads, 10, "SQLite keeps every value")
		}
		e := startEngine(t, st, testConfig(t, "n1"))
		badJobs := make([]int64, len(bads))
		for i, b := range bads {
			badJobs[i] = testdb.Job(t, st, &testdb.JobOpts{DefinitionID: b.id}).ID
		}
		goodJob := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: good}).ID
		e.Wake()
		waitOutcome(t, e, st, goodJob, models.JobSucceeded)
		for i, b := range bads {
			j := waitOutcome(t, e, st, badJobs[i], models.JobFailed)
			require.True(t, strings.Contains(deref(j.Error), "job_definitions."+b.column), "job %d: error %q", j.ID, deref(j.Error))
			requireLog(t, db, j.ID, "failed before starting")
		}
	})
}
