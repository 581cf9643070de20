package taskengine

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
)

// startReq asks the starter to move one queued job to running.
type startReq struct {
	id      int64
	attempt int // as claimed: the start applies only while the row has it
	reply   chan startReply
}

type startReply struct {
	attempt int       // 0: the row was no longer ours to start
	at      time.Time // started_at as written
	err     error
}

// start moves the job to running through the starter batch and returns its
// new attempt number, or 0 when the row changed since the claim, and the
// started_at it wrote.
func (e *Engine) start(id int64, claimedAttempt int) (int, time.Time, error) {
	r := startReq{id: id, attempt: claimedAttempt, reply: make(chan startReply, 1)}
	e.starter.add(r)
	rep := <-r.reply
	return rep.attempt, rep.at, rep.err
}

func (e *Engine) flushStarts(ctx context.Context, batch []startReq) {
	var started map[int64]int
	var err error
	jobs := make([]chimedb.StartJob, len(batch))
	for i, r := range batch {
		jobs[i] = chimedb.StartJob{ID: r.id, Attempt: r.attempt}
	}
	// One timestamp for every try: a retry after an error that hid a
	// successful UPDATE finds the rows that try started by it.
	p := &chimedb.StartJobsParams{NodeID: e.cfg.NodeID, Jobs: jobs, Now: e.now()}
	for attempt := 1; ; attempt++ {
		started, err = e.st.StartJobs(ctx, p)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			break
		}
		e.log.WithError(err).Warn("marking jobs running failed; retrying")
		sleepCtx(ctx, time.Duration(attempt)*100*time.Millisecond)
	}
	for _, r := range batch {
		a := started[r.id]
		// A job claimed twice (released and claimed again while its first
		// copy waited) is started once: the other copy is told it is not ours.
		delete(started, r.id)
		r.reply <- startReply{attempt: a, at: p.Now, err: err}
	}
}

// completion is one outcome on its way to the database, with the job_logs
// line that describes it: the line is written only if the outcome is.
type completion struct {
	out   chimedb.JobOutcome
	log   *logrus.Entry
	level logrus.Level
	msg   string
	// appOnly sends the line to the node's log only, not to job_logs.
	appOnly bool
	status  models.JobStatus // for metrics: the final status, or "retry"
}

// flushCompletions writes a batch of outcomes. A database error is retried
// until it succeeds or the engine gives up at the end of Stop: an outcome
// dropped here would leave the job running forever. Only a transient error
// (the database unreachable, locked, read-only) comes back here: store
// makes results and errors storable and writes around a row it refuses
// (see store.CompleteJobs), so no one job's output can hold the batch, and
// every later one, in this loop.
//
// The transaction also writes the lines the log writer holds, among them
// every line the batch's jobs logged before they ended, and each
// outcome's own line: a job's final state and all its lines up to it
// become visible together (docs/api.md, job logs). The log writer waits
// meanwhile, so no line is written beside the batch with a lower id than
// the batch's lines.
func (e *Engine) flushCompletions(ctx context.Context, batch []completion) {
	lines, written := e.logs.take()
	defer written()
	now := time.Now()
	outs := make([]chimedb.JobOutcome, len(batch))
	for i := range batch {
		c := &batch[i]
		outs[i] = c.out
		if !c.appOnly {
			outs[i].Log = &models.JobLog{JobID: c.out.ID, Level: c.level.String(),
				Message: chimedb.Storable(c.msg, chimedb.MaxLogMessageBytes), CreatedAt: now}
		}
	}
	var applied []int64
	for attempt := 1; ; attempt++ {
		var err error
		applied, err = e.st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: e.cfg.NodeID, Outcomes: outs, Logs: lines})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			e.log.WithError(err).Errorf("dropping %d job outcomes and %d job log lines at shutdown; restart recovery will retry those jobs",
				len(batch), len(lines))
			return
		}
		e.log.WithError(err).WithField("jobs", len(batch)).Warn("writing job outcomes failed; retrying")
		sleepCtx(ctx, min(time.Duration(attempt)*200*time.Millisecond, 5*time.Second))
	}
	ok := make(map[int64]bool, len(applied))
	for _, id := range applied {
		ok[id] = true
	}
	for i := range batch {
		c := &batch[i]
		if !ok[c.out.ID] {
			e.log.WithField(fieldJobID, c.out.ID).Warnf("outcome %q not written: the job was changed meanwhile (canceled or recovered), or the database refused it", c.out.Status)
			continue
		}
		// Its job_logs line went with the outcome: this is the node's log.
		e.log.WithFields(c.log.Data).Log(c.level, c.msg)
		metrics.JobsFinished.WithLabelValues(string(c.status)).Inc()
	}
	e.finished.Add(int64(len(batch)))
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
