package taskengine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
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

// claimWatch numbers the engine's claims, so that a test waits for a claim
// that began after some point instead of sleeping: "nothing was claimed" is
// then shown by a claim that ran, not by time that passed.
type claimWatch struct {
	jobStore
	began, returned atomic.Int64 // claims begun; the highest-numbered one returned
}

func watchClaims(st jobStore) *claimWatch { return &claimWatch{jobStore: st} }

func (w *claimWatch) ClaimJobs(ctx context.Context, p *chimedb.ClaimParams) (*chimedb.ClaimResult, error) {
	n := w.began.Add(1)
	defer func() {
		for {
			r := w.returned.Load()
			if r >= n || w.returned.CompareAndSwap(r, n) {
				return
			}
		}
	}()
	return w.jobStore.ClaimJobs(ctx, p)
}

// mark is the number of claims begun so far.
func (w *claimWatch) mark() int64 { return w.began.Load() }

// waitClaimAfter waits until a claim begun after mark has returned.
func (w *claimWatch) waitClaimAfter(t testing.TB, mark int64) {
	t.Helper()
	require.Eventually(t, func() bool { return w.returned.Load() > mark }, 20*time.Second, time.Millisecond,
		"no claim began after claim %d and returned", mark)
}

// startEngine starts an engine and stops it at cleanup.
func startEngine(t testing.TB, st jobStore, cfg Config) *Engine {
	t.Helper()
	e, err := New(st, &cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
	})
	return e
}

type defOpts struct {
	TaskType       string
	Params         string
	MaxAttempts    int
	TimeoutSeconds int
	BackoffSeconds int
}

func createDef(t testing.TB, db *gorm.DB, name string, o defOpts) int64 {
	t.Helper()
	if o.TaskType == "" {
		o.TaskType = sleep.Kind
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 1
	}
	d := models.JobDefinition{
		Name: name, TaskType: o.TaskType, MaxAttempts: o.MaxAttempts,
		TimeoutSeconds: o.TimeoutSeconds, RetryBackoffSeconds: o.BackoffSeconds, NotifyOn: models.NotifyNever,
	}
	if o.Params != "" {
		d.DefaultParams = models.JSON(o.Params)
	}
	require.NoError(t, db.Create(&d).Error)
	return d.ID
}

// insertJob writes a due ad hoc job the way an admin's SQL would: only the
// definition, plus params when given.
func insertJob(t testing.TB, db *gorm.DB, defID int64, params string) int64 {
	t.Helper()
	if params == "" {
		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, defID).Error)
	} else {
		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id, params) VALUES (?, ?)`, defID, params).Error)
	}
	var id int64
	require.NoError(t, db.Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
	return id
}

func getJob(t testing.TB, db *gorm.DB, id int64) models.Job {
	t.Helper()
	var j models.Job
	require.NoError(t, db.Take(&j, id).Error)
	return j
}

// waitJob polls the row until cond holds; it fails the test after a
// generous timeout (this is a wait, not a timing assertion).
func waitJob(t testing.TB, db *gorm.DB, id int64, what string, cond func(models.Job) bool) models.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j := getJob(t, db, id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: timed out waiting for %s; last row: status=%s attempt=%d control=%q error=%v\nlogs:\n%s",
				id, what, j.Status, j.Attempt, j.Control, deref(j.Error), strings.Join(jobLogs(t, db, id), "\n"))
		}
		time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline: the row is all there is to watch
	}
}

func waitStatus(t testing.TB, db *gorm.DB, id int64, s models.JobStatus) models.Job {
	t.Helper()
	return waitJob(t, db, id, "status "+string(s), func(j models.Job) bool { return j.Status == s })
}

// waitLog waits until a job_logs line of job id contains substr; logs are
// buffered, so they land a few milliseconds after the transition.
func waitLog(t testing.TB, db *gorm.DB, id int64, substr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, l := range jobLogs(t, db, id) {
			if strings.Contains(l, substr) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: no log line containing %q; logs:\n%s", id, substr, strings.Join(jobLogs(t, db, id), "\n"))
		}
		time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline
	}
}

// waitWorker waits until job id's run is under way on e (its task has been
// handed its worker) or the job has finished.
func waitWorker(t testing.TB, e *Engine, db *gorm.DB, id int64) {
	t.Helper()
	waitJob(t, db, id, "on a worker", func(j models.Job) bool {
		return e.exec.run(id) != nil || j.Status.Finished()
	})
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
