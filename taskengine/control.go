package taskengine

import (
	"context"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// controlLoop acts on jobs.control every ControlInterval and refreshes
// running jobs' heartbeat_at every HeartbeatInterval. It runs until the
// last job has returned, so an admin can still stop a job during the
// shutdown grace period.
func (e *Engine) controlLoop(ctx context.Context) {
	ctl := e.cfg.Clock.NewTicker(e.cfg.ControlInterval)
	defer ctl.Stop()
	hb := e.cfg.Clock.NewTicker(e.cfg.HeartbeatInterval)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ctl.Chan():
			e.controlOnce(ctx)
		case <-hb.Chan():
			if _, err := e.st.HeartbeatJobs(ctx, e.cfg.NodeID, e.now()); err != nil && ctx.Err() == nil {
				e.log.WithError(err).Warn("heartbeat of running jobs failed")
			}
		}
	}
}

func (e *Engine) controlOnce(ctx context.Context) {
	canceled, err := e.st.CancelStopRequested(ctx, e.now())
	if err != nil && ctx.Err() == nil {
		e.log.WithError(err).Warn("canceling jobs asked to stop failed")
	}
	for _, id := range canceled {
		e.log.WithField(fieldJobID, id).Info("job canceled (control = stop before it started)")
	}
	reqs, err := e.st.ControlRequests(ctx, e.cfg.NodeID)
	if err != nil {
		if ctx.Err() == nil {
			e.log.WithError(err).Warn("reading control requests failed")
		}
		return
	}
	for _, r := range reqs {
		e.mu.Lock()
		ar := e.runs[r.ID]
		e.mu.Unlock()
		if ar == nil {
			// Started a moment ago and not registered yet, or just ended:
			// the next tick sees it again, or its outcome clears control.
			continue
		}
		e.applyControl(ctx, r, ar)
	}
}

// applyControl calls the task's Pause, Resume or Stop and records the
// outcome; a method that returns false is a refusal, logged as such.
func (e *Engine) applyControl(ctx context.Context, r chimedb.ControlRequest, ar *activeRun) {
	log := ar.job.Log()
	var to models.JobStatus
	switch r.Control {
	case models.ControlPause:
		switch {
		case r.Status == models.JobPaused:
			log.Info("pause ignored: the job is already paused")
		case safeBool(ar.task.Pause):
			ar.paused.Store(true)
			to = models.JobPaused
			log.Info("paused (control = pause)")
		default:
			log.Warn("pause refused: the task cannot pause now")
		}
	case models.ControlResume:
		switch {
		case r.Status == models.JobRunning:
			log.Info("resume ignored: the job is not paused")
		case safeBool(ar.task.Resume):
			ar.paused.Store(false)
			to = models.JobRunning
			log.Info("resumed (control = resume)")
		default:
			log.Warn("resume refused: the task cannot resume now")
		}
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
	if _, err := e.st.SetControlOutcome(ctx, &chimedb.ControlOutcomeParams{ID: r.ID, NodeID: e.cfg.NodeID, To: to}); err != nil && ctx.Err() == nil {
		e.log.WithError(err).WithField(fieldJobID, r.ID).Warn("recording control outcome failed")
	}
}
