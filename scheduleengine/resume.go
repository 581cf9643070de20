package scheduleengine

import (
	"io"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// ResumeCatchUp is what resuming a paused schedule writes at once for the
// fires it missed while paused.
type ResumeCatchUp struct {
	// ScheduledAt is the catch-up job's scheduled_at: the latest missed
	// fire (under fire_all, that of the latest of its jobs).
	ScheduledAt time.Time
	// MissedFires is how many missed fires it stands for: the job's
	// missed_fires (under fire_all, one per job).
	MissedFires int
	// Jobs is how many catch-up jobs are written: 1 under fire_once; under
	// fire_all one per missed fire, up to the cap.
	Jobs int
}

// ResumeOptions are the engine settings a resume's catch-up depends on.
type ResumeOptions struct {
	// MisfireThreshold and FireAllCap are the engine's (Config; zero: the
	// defaults).
	MisfireThreshold time.Duration
	FireAllCap       int
	// Busy: a job of the schedule is not finished yet. Under concurrency
	// forbid the engine then writes no catch-up.
	Busy bool
}

// PreviewResume says what the engine would write at once if r's schedule,
// paused, were resumed at now. It asks the engine's own code, not a copy
// of it: a throwaway engine with no store and no timer applies the row as
// a sync that reads the resume does (the restore rule, and a timing edited
// while paused starting afresh) and plans it at now as a fire would
// (computePlan). ok is false when resuming writes no catch-up: nothing
// was missed, misfire_policy skip, the catch-up window or max_runs left
// nothing, a forbid schedule is busy, or the engine would mark the row
// invalid. The API's schedule show and the console call it.
func PreviewResume(r chimedb.ScheduleRow, opts ResumeOptions, now time.Time) (catchUp ResumeCatchUp, ok bool) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg := Config{MisfireThreshold: opts.MisfireThreshold, FireAllCap: opts.FireAllCap,
		Clock: clockwork.NewFakeClockAt(now), Logger: log}.withDefaults()
	e := &Engine{cfg: cfg, log: log}
	e.clearSchedules()
	r.Schedule.Status = models.ScheduleActive // what the resume writes
	en := e.apply(&r)
	if en == nil {
		return ResumeCatchUp{}, false
	}
	p := computePlan(e.planInput(en, opts.Busy), now)
	for _, f := range p.fires {
		if !f.catchUp {
			continue
		}
		catchUp.Jobs++
		catchUp.MissedFires += f.missedFires
		if f.at.After(catchUp.ScheduledAt) {
			catchUp.ScheduledAt = f.at
		}
	}
	return catchUp, catchUp.Jobs > 0
}
