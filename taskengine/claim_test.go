package taskengine

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// A claim that committed hands its rows on even when reading their
// definitions fails after the commit: the job is given back to pending at
// once (no attempt used) and runs on the next claim, instead of sitting
// queued until the reconciler frees it.
func TestClaimedRowsSurviveAFailureAfterCommit(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		// A task with an OnQueue of its own (a claim with StartKinds reads
		// definitions inside: see store's TestClaimJobsStartKindsDefinitionReadFails).
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "after-commit", TaskType: queuedSleepKind, DefaultParams: `{"duration":"0s"}`}).ID
		// The first claim's read of definitions (after its commit) fails,
		// every time it is tried; later claims read them fine.
		var failing atomic.Bool
		failing.Store(true)
		require.NoError(t, db.Callback().Row().Before("gorm:row").Register("test:fail_definitions", func(tx *gorm.DB) {
			if tx.Statement.Table == "job_definitions" && failing.Load() {
				_ = tx.AddError(errors.New("injected: connection lost"))
			}
		}))
		id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		cfg := testConfig(t, nodeName(t))
		// No tasks.QueueFree kind registered: the claim passes no
		// StartKinds and keeps the read after its commit.
		cfg.Registry = tasks.NewRegistry()
		cfg.Registry.MustRegister(queuedSleepKind, func() tasks.Task { return &queuedSleep{} })
		e := startEngine(t, st, cfg)
		require.Equal(t, released, waitLeft(t, e, id).status)
		requireLog(t, db, id, "released to pending")
		failing.Store(false)
		j := waitOutcome(t, e, st, id, models.JobSucceeded)
		require.Equal(t, 1, j.Attempt, "the release used no attempt")
	})
}
