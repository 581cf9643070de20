package taskengine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
)

// logWriter buffers job_logs rows and writes them with multi-row INSERTs,
// so a job's transitions and its task's lines cost no round trip on the
// job's path. Lines reach the table within logFlushEvery, and every line
// accepted before Stop is written before Stop returns.
//
// The completer takes what is buffered (take) and writes it in the
// transaction of its outcomes, so a job's final state is never visible
// before the lines it logged up to then. While the completer writes, the
// writer waits: a job's lines reach the table, and get their ids, in the
// order they were logged, and a follower's cursor never passes a line
// that is written later with a lower id.
//
// It is a graceful service, stopped after the completer: the lines left
// are written when its run ends, under a context that ends only when a
// Stop's ctx does.
type logWriter struct {
	startstop.Base
	st      jobStore
	log     logrus.FieldLogger
	clock   clockwork.Clock
	signals *testSignals
	in      chan models.JobLog
	takes   chan logTake
	// done is closed when the current run has written its last line:
	// lines after that go to the application log. A new one each Start.
	done atomic.Pointer[chan struct{}]
	// buffered counts the lines accepted and neither written nor taken.
	buffered atomic.Int64
}

// logTake is one take: the lines, and the completer's word that it has
// written them (or given up).
type logTake struct {
	lines   chan []models.JobLog
	written chan struct{}
}

const (
	logBuffer     = 16384
	logBatch      = 2000
	logFlushEvery = 20 * time.Millisecond
)

func newLogWriter(st jobStore, log logrus.FieldLogger, clock clockwork.Clock, signals *testSignals) *logWriter {
	w := &logWriter{st: st, log: log, clock: clock, signals: signals,
		in: make(chan models.JobLog, logBuffer), takes: make(chan logTake)}
	// Lines logged before the first Start wait for it.
	open := make(chan struct{})
	w.done.Store(&open)
	return w
}

// add queues one row. It blocks only when the buffer is full, which slows
// the jobs that log rather than dropping their lines.
func (w *logWriter) add(l models.JobLog) {
	w.buffered.Add(1)
	select {
	case w.in <- l:
	case <-*w.done.Load():
		w.buffered.Add(-1)
		// After stop nothing writes; keep the line in the app log at least.
		w.log.WithField("job_id", l.JobID).Warnf("job log line after engine stop: %s", l.Message)
	}
}

// take returns every line accepted so far and not yet written, for the
// caller to write, and stops the writer until the caller calls written;
// lines are the writer's again from then. Without such lines (a success
// logs none) it costs an atomic read.
func (w *logWriter) take() (lines []models.JobLog, written func()) {
	if w.buffered.Load() == 0 {
		return nil, func() {}
	}
	t := logTake{lines: make(chan []models.JobLog, 1), written: make(chan struct{})}
	select {
	case w.takes <- t:
	case <-*w.done.Load():
		return nil, func() {}
	}
	return <-t.lines, func() { close(t.written) }
}

// Start runs the writer until its run ends; then it writes what is left.
func (w *logWriter) Start(ctx context.Context) error {
	runCtx, workCtx, finished, ok := w.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	done := make(chan struct{})
	w.done.Store(&done)
	ticker := w.clock.NewTicker(logFlushEvery)
	go func() {
		defer finished(nil)
		defer close(done)
		defer ticker.Stop()
		w.run(runCtx, workCtx, ticker)
	}()
	return nil
}

// logBatchBuf is the batch the writer gathers, and writes under ctx.
type logBatchBuf struct {
	w     *logWriter
	ctx   context.Context
	lines []models.JobLog
}

func (b *logBatchBuf) add(l models.JobLog) {
	b.lines = append(b.lines, l)
	if len(b.lines) >= logBatch {
		b.flush()
	}
}

func (b *logBatchBuf) flush() {
	if len(b.lines) == 0 {
		return
	}
	b.w.write(b.ctx, b.lines)
	b.w.buffered.Add(-int64(len(b.lines)))
	b.lines = b.lines[:0]
}

// run writes until runCtx ends, then writes what is left. Rows are
// flushed every logFlushEvery, so a busy engine writes a few large
// INSERTs instead of many small ones.
func (w *logWriter) run(runCtx, workCtx context.Context, ticker clockwork.Ticker) {
	b := &logBatchBuf{w: w, ctx: workCtx, lines: make([]models.JobLog, 0, logBatch)}
	for {
		select {
		case l := <-w.in:
			b.add(l)
		case <-ticker.Chan():
			b.flush()
		case t := <-w.takes:
			// What the channel holds now includes every line logged
			// before the take was asked for; later ones wait.
			for n := len(w.in); n > 0; n-- {
				b.lines = append(b.lines, <-w.in)
			}
			w.buffered.Add(-int64(len(b.lines)))
			t.lines <- b.lines
			<-t.written
			b.lines = b.lines[:0] // the taker is done with it
		case <-runCtx.Done():
			// Writers have finished (the engine stops the writer last): drain.
			for {
				select {
				case l := <-w.in:
					b.add(l)
				default:
					b.flush()
					return
				}
			}
		}
	}
}

func (w *logWriter) write(ctx context.Context, batch []models.JobLog) {
	for attempt := 1; ; attempt++ {
		err := w.st.InsertJobLogs(ctx, batch)
		if err == nil {
			w.signals.flush(nil, nil, batch)
			return
		}
		if attempt == 3 || ctx.Err() != nil {
			// Only a transient error gets here (store writes around a line
			// it refuses), so the database lost every line of the batch.
			w.log.WithError(err).WithField("job_ids", logJobIDs(batch, 20)).Errorf("dropping %d job log lines", len(batch))
			return
		}
		w.log.WithError(err).Warn("writing job logs failed; retrying")
		sleepCtx(ctx, w.clock, time.Duration(attempt)*200*time.Millisecond)
	}
}

// logJobIDs lists the first n distinct jobs of batch, for the app log.
func logJobIDs(batch []models.JobLog, n int) []int64 {
	var ids []int64
	for _, l := range batch {
		if len(ids) == n {
			break
		}
		if !slices.Contains(ids, l.JobID) {
			ids = append(ids, l.JobID)
		}
	}
	return ids
}

// jobLogHook sends every line of the job logger to job_logs (when it has a
// job_id) and to the application logger. The job logger itself writes
// nowhere: the hook is its only output.
type jobLogHook struct {
	w   *logWriter
	app logrus.FieldLogger
}

func (h *jobLogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *jobLogHook) Fire(e *logrus.Entry) error {
	maskEntry(e)
	if id, ok := e.Data[fieldJobID].(int64); ok && id > 0 {
		// Cut here too, not only in store: the buffer holds thousands of
		// lines, and a task's line is as long as the task likes.
		// The engine's clock, not the entry's: every time the engine
		// writes is on one clock.
		h.w.add(models.JobLog{JobID: id, Level: e.Level.String(), Message: chimedb.Storable(dbMessage(e), chimedb.MaxLogMessageBytes), CreatedAt: h.w.clock.Now()})
	}
	if enabled(h.app, e.Level) {
		l := h.app.WithFields(e.Data)
		switch e.Level {
		case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
			l.Error(e.Message)
		case logrus.WarnLevel:
			l.Warn(e.Message)
		case logrus.InfoLevel:
			l.Info(e.Message)
		default:
			l.Debug(e.Message)
		}
	}
	return nil
}

// enabled avoids building the app logger's entry for a level it drops.
func enabled(l logrus.FieldLogger, lv logrus.Level) bool {
	switch x := l.(type) {
	case *logrus.Logger:
		return x.IsLevelEnabled(lv)
	case *logrus.Entry:
		return x.Logger.IsLevelEnabled(lv)
	}
	return true
}

// Fields every job line carries; they are columns (or implied) in job_logs,
// so dbMessage leaves them out of the message text.
const (
	fieldJobID      = "job_id"
	fieldScheduleID = "schedule_id"
	fieldNodeID     = "node_id"
)

// dbMessage is the line as stored: the message, then any extra fields as
// key=value in a stable order (an error field is what one most often wants).
func dbMessage(e *logrus.Entry) string {
	if len(e.Data) <= 3 {
		return e.Message
	}
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		switch k {
		case fieldJobID, fieldScheduleID, fieldNodeID:
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(e.Message)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, e.Data[k])
	}
	return b.String()
}

// newJobLogger returns the engine-owned logger that Job.Logger entries
// derive from. Debug lines are kept: a task's own debug output is worth
// having in job_logs even when the node logs at info.
func newJobLogger(w *logWriter, app logrus.FieldLogger) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetFormatter(nopFormatter{})
	l.SetLevel(logrus.DebugLevel)
	l.SetNoLock()
	l.AddHook(&jobLogHook{w: w, app: app})
	return l
}

type nopFormatter struct{}

func (nopFormatter) Format(*logrus.Entry) ([]byte, error) { return nil, nil }
