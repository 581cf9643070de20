package taskengine

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A success is said in the node's log only (its job_logs line is derived
// from the row), with the job's fields, at info: a node logging at info
// gets the line, one logging at warn gets nothing, and the line is no
// longer worded for it.
func TestSuccessLineInNodeLog(t *testing.T) {
	t.Parallel()
	for _, level := range []logrus.Level{logrus.InfoLevel, logrus.WarnLevel} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			st := testdb.Open(t, store.SQLite)
			log, hook := logtest.NewNullLogger()
			log.SetLevel(level)
			cfg := testConfig(t, nodeName(t))
			cfg.Logger = log
			e := startEngine(t, st, cfg)
			id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "ok", DefaultParams: `{"duration":"1ms"}`})
			waitOutcome(t, e, st, id, models.JobSucceeded)
			// The completer logs after its commit: once stopped, it has.
			require.NoError(t, e.Stop(t.Context()))
			var said []*logrus.Entry
			for _, l := range hook.AllEntries() {
				if strings.HasPrefix(l.Message, "succeeded (attempt") {
					said = append(said, l)
				}
			}
			if level == logrus.WarnLevel {
				require.Empty(t, said)
				return
			}
			require.Len(t, said, 1)
			require.Equal(t, logrus.InfoLevel, said[0].Level)
			require.Equal(t, id, said[0].Data[fieldJobID])
			require.Contains(t, said[0].Message, "succeeded (attempt 1, ")
		})
	}
}
