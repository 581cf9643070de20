package taskengine

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
)

// controller acts on jobs.control every ControlInterval and refreshes
// running jobs' heartbeat_at every HeartbeatInterval. The engine stops it
// after the executor, so an admin can still stop a job during the
// shutdown grace period.
type controller struct {
	startstop.Base
	st      jobStore
	cfg     *Config
	log     logrus.FieldLogger
	exec    *executor // its runs are what control reaches
	signals *testSignals
}

// Start runs the controller until Stop or ctx ends.
func (c *controller) Start(ctx context.Context) error {
	// Graceful only so that Stop always waits for its goroutine.
	ctx, _, finished, ok := c.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	// Made here, not on the goroutine: a test's fake clock sees them
	// once Start has returned.
	ctl := c.cfg.Clock.NewTicker(c.cfg.ControlInterval)
	hb := c.cfg.Clock.NewTicker(c.cfg.HeartbeatInterval)
	go func() {
		defer finished(nil)
		defer ctl.Stop()
		defer hb.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ctl.Chan():
				c.controlOnce(ctx)
			case <-hb.Chan():
				if _, err := c.st.HeartbeatJobs(ctx, c.cfg.NodeID, c.now()); err != nil && ctx.Err() == nil {
					c.log.WithError(err).Warn("heartbeat of running jobs failed")
				}
			}
		}
	}()
	return nil
}

func (c *controller) now() time.Time { return chimedb.DBTime(c.cfg.Clock.Now()) }

func (c *controller) controlOnce(ctx context.Context) {
	canceled, err := c.st.CancelStopRequested(ctx, c.now())
	if err != nil && ctx.Err() == nil {
		c.log.WithError(err).Warn("canceling jobs asked to stop failed")
	}
	for _, id := range canceled {
		c.log.WithField(fieldJobID, id).Info("job canceled (control = stop before it started)")
		c.signals.controlled.Signal(controlSignal{id: id, control: models.ControlStop, to: models.JobCanceled})
	}
	reqs, err := c.st.ControlRequests(ctx, c.cfg.NodeID)
	if err != nil {
		if ctx.Err() == nil {
			c.log.WithError(err).Warn("reading control requests failed")
		}
		return
	}
	for _, r := range reqs {
		ar := c.exec.run(r.ID)
		if ar == nil {
			// Started a moment ago and not registered yet, or just ended:
			// the next tick sees it again, or its outcome clears control.
			continue
		}
		c.apply(ctx, r, ar)
	}
}

// apply calls the task's Pause, Resume or Stop and records the
// outcome; a method that returns false is a refusal, logged as such.
func (c *controller) apply(ctx context.Context, r chimedb.ControlRequest, ar *activeRun) {
	log := ar.job.Log()
	var to models.JobStatus
	switch r.Control {
	case models.ControlPause, models.ControlResume:
		to = setPaused(log, r.Status, ar, r.Control == models.ControlPause)
	case models.ControlStop:
		// Marked before Stop: Execute may return before Stop does.
		ar.stopRequested.Store(true)
		if safeBool(ar.task.Stop) {
			log.Info("stop requested (control = stop); stopping")
		} else {
			ar.stopRequested.Store(false)
			log.Warn("stop refused: the task does not support stop")
		}
	default:
		log.Warnf("unknown control %q ignored", r.Control)
	}
	if _, err := c.st.SetControlOutcome(ctx, &chimedb.ControlOutcomeParams{ID: r.ID, NodeID: c.cfg.NodeID, To: to}); err != nil {
		if ctx.Err() == nil {
			c.log.WithError(err).WithField(fieldJobID, r.ID).Warn("recording control outcome failed")
		}
		return
	}
	c.signals.controlled.Signal(controlSignal{id: r.ID, control: r.Control, to: to})
}

// setPaused pauses the run (pause) or resumes it, and returns the job's
// status after, or "" when nothing changed: the job was already there, or
// the task refused. Pause and resume are one switch flipped either way.
func setPaused(log logrus.FieldLogger, status models.JobStatus, ar *activeRun, pause bool) models.JobStatus {
	verb, done, to, call, already := "resume", "resumed", models.JobRunning, ar.task.Resume, "the job is not paused"
	if pause {
		verb, done, to, call, already = "pause", "paused", models.JobPaused, ar.task.Pause, "the job is already paused"
	}
	switch {
	case status == to:
		log.Infof("%s ignored: %s", verb, already)
	case safeBool(call):
		ar.paused.Store(pause)
		log.Infof("%s (control = %s)", done, verb)
		return to
	default:
		log.Warnf("%s refused: the task cannot %s now", verb, verb)
	}
	return ""
}
