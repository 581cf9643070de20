package taskengine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

// testRegistry has the sleep task and a few tasks that misbehave on purpose.
func testRegistry() *tasks.Registry {
	r := tasks.NewRegistry()
	r.MustRegister(sleep.Kind, sleep.New)
	r.MustRegister("panic", func() tasks.Task { return &panicTask{} })
	r.MustRegister("stubborn", func() tasks.Task { return &stubbornTask{} })
	r.MustRegister("slowqueue", func() tasks.Task { return &slowQueueTask{} })
	r.MustRegister("wait", func() tasks.Task { return &waitTask{} })
	r.MustRegister("waitfree", func() tasks.Task { return &waitFreeTask{} })
	r.MustRegister(queuedSleepKind, func() tasks.Task { return &queuedSleep{} })
	return r
}

// queuedSleepKind is the sleep task without tasks.QueueFree: its jobs are
// claimed to queued and started by the starter, the path of any task with
// an OnQueue of its own.
const queuedSleepKind = "sleep-queued"

type queuedSleep struct{ tasks.Base }

func (*queuedSleep) Execute(ctx context.Context, job *tasks.Job) error {
	return (&sleep.Task{}).Execute(ctx, job)
}

// waitFreeTask is waitTask with tasks.QueueFree: claimed straight into running.
type waitFreeTask struct{ waitTask }

func (*waitFreeTask) QueueFree() {}

type panicTask struct{ tasks.Base }

func (*panicTask) Execute(context.Context, *tasks.Job) error { panic("boom in the task") }

// stubbornTask refuses to pause and runs until its context ends.
type stubbornTask struct{ tasks.Base }

func (*stubbornTask) Pause() bool { return false }
func (*stubbornTask) Execute(ctx context.Context, job *tasks.Job) error {
	job.Log().Info("stubborn task running")
	<-ctx.Done()
	return tasks.ContextError(ctx)
}

// waitTask runs until the test opens its gate (params {"gate": name}) or
// its context ends: work whose length the test decides, without a clock.
type waitTask struct{ tasks.Base }

var gates sync.Map // name → chan struct{}

// openGate returns a gate name for a waitTask's params and the func that
// lets every job waiting on it finish.
func openGate(t testing.TB) (name string, open func()) {
	name = t.Name()
	ch := make(chan struct{})
	gates.Store(name, ch)
	t.Cleanup(func() { gates.Delete(name) })
	var once sync.Once
	return name, func() { once.Do(func() { close(ch) }) }
}

func (*waitTask) Execute(ctx context.Context, job *tasks.Job) error {
	var p struct {
		Gate string `json:"gate"`
	}
	if err := job.Bind(&p); err != nil {
		return err
	}
	ch, ok := gates.Load(p.Gate)
	if !ok {
		return fmt.Errorf("wait: no gate %q", p.Gate)
	}
	select {
	case <-ch.(chan struct{}):
		return nil
	case <-ctx.Done():
		return tasks.ContextError(ctx)
	}
}

// slowQueueTask never gets past OnQueue until its context ends, which
// holds a job in queued for the shutdown test.
type slowQueueTask struct{ tasks.Base }

func (*slowQueueTask) OnQueue(ctx context.Context, _ *tasks.Job) error {
	<-ctx.Done()
	return ctx.Err()
}
func (*slowQueueTask) Execute(context.Context, *tasks.Job) error { return nil }

func testLogger(t testing.TB) *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// testConfig uses short intervals so tests take seconds, not minutes.
func testConfig(t testing.TB, nodeID string) Config {
	return Config{
		NodeID:            nodeID,
		Logger:            testLogger(t),
		PollInterval:      100 * time.Millisecond,
		ControlInterval:   50 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		ShutdownGrace:     2 * time.Second,
		PoolSize:          8,
		Registry:          testRegistry(),
	}
}

// newTestEngine builds an engine whose test signals record.
func newTestEngine(t testing.TB, st jobStore, cfg Config) *Engine {
	t.Helper()
	e, err := New(st, &cfg)
	require.NoError(t, err)
	e.signals.Init(t)
	return e
}

// startEngine starts an engine with its test signals and stops it at cleanup.
func startEngine(t testing.TB, st jobStore, cfg Config) *Engine {
	t.Helper()
	e := newTestEngine(t, st, cfg)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	return e
}

// claimMark is the number of claims e has begun: claimedAfter waits for
// a later one.
func claimMark(e *Engine) uint64 { return e.producer.launched.Load() }

// waitClaimAfter waits until a claim begun after mark has returned and the
// producer has taken its result in: "nothing was claimed" is then shown
// by a claim that ran, not by time that passed.
func waitClaimAfter(t testing.TB, e *Engine, mark uint64) claimSignal {
	t.Helper()
	return e.signals.claimed.WaitFor(fmt.Sprintf("a claim after claim %d", mark), func(c claimSignal) bool { return c.seq > mark })
}

// waitClaimed waits until a claim of e has taken job id (queued, or
// running when its task is tasks.QueueFree), and returns the claim.
func waitClaimed(t testing.TB, e *Engine, id int64) claimSignal {
	t.Helper()
	return e.signals.claimed.WaitFor(fmt.Sprintf("job %d claimed", id), func(c claimSignal) bool { return slices.Contains(c.ids, id) })
}

// waitStarted waits until job id's Execute is called on e: the job is
// running, its run is registered for control and its timeout armed.
func waitStarted(t testing.TB, e *Engine, id int64) {
	t.Helper()
	e.signals.started.WaitFor(fmt.Sprintf("job %d started", id), func(v int64) bool { return v == id })
}

// waitLeft waits until job id has left e's executor and returns how.
func waitLeft(t testing.TB, e *Engine, id int64) completedSignal {
	t.Helper()
	return e.signals.completed.WaitFor(fmt.Sprintf("job %d done on this node", id), func(c completedSignal) bool { return c.id == id })
}

// waitControlled waits until e has written the outcome of control c on
// job id and returns it.
func waitControlled(t testing.TB, e *Engine, id int64, c models.JobControl) controlSignal {
	t.Helper()
	return e.signals.controlled.WaitFor(fmt.Sprintf("control %q of job %d answered", c, id), func(s controlSignal) bool {
		return s.id == id && s.control == c
	})
}

// waitOutcome waits until e has committed an outcome of job id with status
// s (pending: a retry or a snooze), with every line the job logged before
// it, and returns the row.
func waitOutcome(t testing.TB, e *Engine, st *store.Store, id int64, s models.JobStatus) models.Job {
	t.Helper()
	return waitOutcomeFrom(t, e, st, 0, id, s)
}

// waitOutcomeFrom is waitOutcome among the flushes after mark (see
// e.signals.flushed.Len).
func waitOutcomeFrom(t testing.TB, e *Engine, st *store.Store, mark int, id int64, s models.JobStatus) models.Job {
	t.Helper()
	e.signals.flushed.WaitFrom(mark, fmt.Sprintf("outcome %s of job %d written", s, id), func(f flushSignal) bool {
		return slices.ContainsFunc(f.outcomes, func(o chimedb.JobOutcome) bool { return o.ID == id && o.Status == s })
	})
	return testdb.GetJob(t, st, id)
}

// waitOutcomes waits until e has committed n outcomes in all.
func waitOutcomes(t testing.TB, e *Engine, n int) {
	t.Helper()
	seen := 0
	e.signals.flushed.WaitFor(fmt.Sprintf("%d outcomes written", n), func(f flushSignal) bool {
		seen += len(f.outcomes)
		return seen >= n
	})
}

// waitLogged waits until e has written a job_logs line of job id that
// contains substr: for lines that are not followed by an outcome.
func waitLogged(t testing.TB, e *Engine, id int64, substr string) {
	t.Helper()
	e.signals.flushed.WaitFor(fmt.Sprintf("job %d: a line containing %q written", id, substr), func(f flushSignal) bool {
		return slices.ContainsFunc(f.lines, func(l models.JobLog) bool { return l.JobID == id && strings.Contains(l.Message, substr) })
	})
}

// adHocJob inserts a definition as o describes it, and one due job of it.
func adHocJob(t testing.TB, st *store.Store, o *testdb.DefinitionOpts) int64 {
	t.Helper()
	return testdb.Job(t, st, &testdb.JobOpts{DefinitionID: testdb.Definition(t, st, o).ID}).ID
}

// waitJob polls the row until cond holds; it fails the test after a
// generous timeout (this is a wait, not a timing assertion). Only for
// what another process does: an engine of this one is waited for by its
// test signals.
func waitJob(t testing.TB, st *store.Store, id int64, what string, cond func(models.Job) bool) models.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := testdb.GetJob(t, st, id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: timed out waiting for %s; last row: status=%s attempt=%d control=%q error=%v\nlogs:\n%s",
				id, what, j.Status, j.Attempt, j.Control, deref(j.Error), strings.Join(jobLogs(t, st.DB(), id), "\n"))
		}
		time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline: the row is all there is to watch
	}
}

// requireLog says that a job_logs line of job id contains substr, now: a
// job's lines up to its outcome are written with it (or before).
func requireLog(t testing.TB, db *gorm.DB, id int64, substr string) {
	t.Helper()
	require.Positive(t, countLogs(t, db, id, substr), "job %d: no line containing %q; logs:\n%s", id, substr, strings.Join(jobLogs(t, db, id), "\n"))
}

func jobLogs(t testing.TB, db *gorm.DB, id int64) []string {
	t.Helper()
	var rows []models.JobLog
	require.NoError(t, db.Where("job_id = ?", id).Order("id").Find(&rows).Error)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Level + ": " + r.Message
	}
	return out
}

func countLogs(t testing.TB, db *gorm.DB, id int64, substr string) int {
	n := 0
	for _, l := range jobLogs(t, db, id) {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func nodeName(t testing.TB) string {
	return fmt.Sprintf("node-%s", strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
}

// insertForbidSchedule adds the schedule "excl", concurrency = forbid, of
// definition def, as an admin's SQL would, and returns its id.
func insertForbidSchedule(t testing.TB, db *gorm.DB, def int64) int64 {
	t.Helper()
	require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, concurrency)
		VALUES ('excl', ?, 'interval', 1, 'forbid')`, def).Error)
	var id int64
	require.NoError(t, db.Raw(`SELECT id FROM schedules WHERE name = 'excl'`).Scan(&id).Error)
	return id
}
