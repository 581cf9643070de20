package taskengine

import (
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsignal"
	"github.com/chimesched/chime/models"
)

// testSignals let tests wait for what the engine did instead of polling
// the database for its effects (see internal/testsignal). Each costs a nil
// check unless a test calls Init, between New and Start.
type testSignals struct {
	// claimed: the producer has taken a claim's result in (its floor, its
	// held retry), the claim's jobs are on their way to the executor.
	claimed testsignal.Signal[claimSignal]
	// started: a job's Execute is about to be called; its run is
	// registered (control reaches it) and its timeout armed.
	started testsignal.Signal[int64]
	// completed: a job has left the executor: its outcome is with the
	// completer, or it was given back to pending (already written).
	completed testsignal.Signal[completedSignal]
	// controlled: the outcome of a jobs.control request is written.
	controlled testsignal.Signal[controlSignal]
	// flushed: outcomes and job_logs lines are committed.
	flushed testsignal.Signal[flushSignal]
}

func (s *testSignals) Init(tb testsignal.TB) {
	s.claimed.Init(tb)
	s.started.Init(tb)
	s.completed.Init(tb)
	s.controlled.Init(tb)
	s.flushed.Init(tb)
}

// claimSignal is one claim: seq numbers the claims in the order they began
// (from 1), ids are the jobs it took.
type claimSignal struct {
	seq uint64
	ids []int64
	err error
}

// released is the status of a completedSignal for a job given back to
// pending without an outcome.
const released models.JobStatus = "released"

type completedSignal struct {
	id     int64
	status models.JobStatus // as recorded: pending for a retry or a snooze; or released
	freed  bool             // its worker is free (not when an OnQueue that did not return holds it)
}

type controlSignal struct {
	id      int64
	control models.JobControl
	to      models.JobStatus // the status written, if any: canceled for a stop before the start
}

// flushSignal is what one flush committed.
type flushSignal struct {
	outcomes []chimedb.JobOutcome // the outcomes applied
	lines    []models.JobLog
}

// flushed signals a flush; it copies what the flusher will reuse.
func (s *testSignals) flush(outs []chimedb.JobOutcome, applied map[int64]bool, lines []models.JobLog) {
	if !s.flushed.Enabled() {
		return
	}
	f := flushSignal{lines: append([]models.JobLog(nil), lines...)}
	for _, o := range outs {
		if applied[o.ID] {
			f.outcomes = append(f.outcomes, o)
		}
	}
	s.flushed.Signal(f)
}
