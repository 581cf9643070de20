package taskengine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
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

// starter moves claimed jobs from queued to running, in batches: a start
// is one guarded UPDATE for the whole batch.
type starter struct {
	*batcher[startReq]
	st     jobStore
	nodeID string
	log    logrus.FieldLogger
	clock  clockwork.Clock
}

// starterLinger is how long the starter waits for the next start of a
// claim; at most four times that in all.
const starterLinger = 200 * time.Microsecond

func newStarter(st jobStore, cfg *Config, log logrus.FieldLogger, size int) *starter {
	s := &starter{st: st, nodeID: cfg.NodeID, log: log, clock: cfg.Clock}
	s.batcher = newBatcher(size, cfg.Clock, s.flush)
	// A claim's jobs leave OnQueue within microseconds of each other, and
	// each waits for its start: flushing the first alone made the rest wait
	// for that flush and then their own (BenchmarkDrain: start wait 1.9 ×
	// the flush, 1.4 × with the linger, and a third fewer start UPDATEs).
	s.linger = starterLinger
	return s
}

// start moves the job to running through the batch and returns its new
// attempt number, or 0 when the row changed since the claim, and the
// started_at it wrote.
func (s *starter) start(id int64, claimedAttempt int) (int, time.Time, error) {
	r := startReq{id: id, attempt: claimedAttempt, reply: make(chan startReply, 1)}
	s.add(r)
	rep := <-r.reply
	return rep.attempt, rep.at, rep.err
}

func (s *starter) flush(ctx context.Context, batch []startReq) {
	var started map[int64]int
	var err error
	jobs := make([]chimedb.StartJob, len(batch))
	for i, r := range batch {
		jobs[i] = chimedb.StartJob{ID: r.id, Attempt: r.attempt}
	}
	// One timestamp for every try: a retry after an error that hid a
	// successful UPDATE finds the rows that try started by it.
	p := &chimedb.StartJobsParams{NodeID: s.nodeID, Jobs: jobs, Now: chimedb.DBTime(s.clock.Now())}
	for attempt := 1; ; attempt++ {
		started, err = s.st.StartJobs(ctx, p)
		if err == nil || attempt == 3 || ctx.Err() != nil {
			break
		}
		s.log.WithError(err).Warn("marking jobs running failed; retrying")
		sleepCtx(ctx, s.clock, time.Duration(attempt)*100*time.Millisecond)
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
	// succeeded, with msg empty, is a success's line, worded only when
	// the node's log keeps it: attempt and took are its figures.
	succeeded bool
	attempt   int
	took      time.Duration
	status    models.JobStatus // for metrics: the final status, or "retry"
}

// message is the line's text.
func (c *completion) message() string {
	if c.succeeded && c.msg == "" {
		return models.SucceededMessage(c.attempt, c.took)
	}
	return c.msg
}

// completer writes outcomes in batches, each with the job_logs lines
// buffered until then (see flush).
type completer struct {
	*batcher[completion]
	st      jobStore
	nodeID  string
	log     logrus.FieldLogger
	clock   clockwork.Clock
	logs    *logWriter
	signals *testSignals
	// finished counts the outcomes flushed; benchmarks read it.
	finished atomic.Int64
}

func newCompleter(st jobStore, cfg *Config, log logrus.FieldLogger, size int, logs *logWriter, signals *testSignals, herd *herdWatch) *completer {
	c := &completer{st: st, nodeID: cfg.NodeID, log: log, clock: cfg.Clock, logs: logs, signals: signals}
	c.batcher = newBatcher(size, cfg.Clock, c.flush)
	c.hold = herd.wait
	return c
}

// flush writes a batch of outcomes. A database error is retried until it
// succeeds or the engine gives up at the end of Stop: an outcome dropped
// here would leave the job running forever. Only a transient error (the
// database unreachable, locked, read-only) comes back here: store makes
// results and errors storable and writes around a row it refuses (see
// store.CompleteJobs), so no one job's output can hold the batch, and
// every later one, in this loop.
//
// The transaction also writes the lines the log writer holds, among them
// every line the batch's jobs logged before they ended, and each
// outcome's own line: a job's final state and all its lines up to it
// become visible together (docs/api.md, job logs). The log writer waits
// meanwhile, so no line is written beside the batch with a lower id than
// the batch's lines.
func (c *completer) flush(ctx context.Context, batch []completion) {
	lines, written := c.logs.take()
	defer written()
	outs := outcomes(batch, c.clock.Now())
	var applied []int64
	for attempt := 1; ; attempt++ {
		var err error
		applied, err = c.st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: c.nodeID, Outcomes: outs, Logs: lines})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			c.log.WithError(err).Errorf("dropping %d job outcomes and %d job log lines at shutdown; restart recovery will retry those jobs",
				len(batch), len(lines))
			return
		}
		c.log.WithError(err).WithField("jobs", len(batch)).Warn("writing job outcomes failed; retrying")
		sleepCtx(ctx, c.clock, min(time.Duration(attempt)*200*time.Millisecond, 5*time.Second))
	}
	ok := make(map[int64]bool, len(applied))
	for _, id := range applied {
		ok[id] = true
	}
	for i := range batch {
		b := &batch[i]
		if !ok[b.out.ID] {
			c.log.WithField(fieldJobID, b.out.ID).Warnf("outcome %q not written: the job was changed meanwhile (canceled or recovered), or the database refused it", b.out.Status)
			continue
		}
		// Its job_logs line went with the outcome: this is the node's log,
		// whose entry is built only at a level it keeps.
		if enabled(c.log, b.level) {
			c.log.WithFields(b.log.Data).Log(b.level, b.message())
		}
		metrics.JobsFinished.WithLabelValues(string(b.status)).Inc()
	}
	c.signals.flush(outs, ok, lines)
	c.finished.Add(int64(len(batch)))
}

// outcomes are the rows of batch, each with its job_logs line unless it
// is for the node's log only.
func outcomes(batch []completion, now time.Time) []chimedb.JobOutcome {
	outs := make([]chimedb.JobOutcome, len(batch))
	for i := range batch {
		c := &batch[i]
		outs[i] = c.out
		if !c.appOnly {
			outs[i].Log = &models.JobLog{JobID: c.out.ID, Level: c.level.String(),
				Message: chimedb.Storable(c.message(), chimedb.MaxLogMessageBytes), CreatedAt: now}
		}
	}
	return outs
}

// sleepCtx waits d on clock, or until ctx ends.
func sleepCtx(ctx context.Context, clock clockwork.Clock, d time.Duration) {
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.Chan():
	}
}
