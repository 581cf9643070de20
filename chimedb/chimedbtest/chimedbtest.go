// Package chimedbtest is the conformance suite of chimedb: every method of
// every interface chimedb declares, run against a real database with the
// contract its documentation states (sentinel errors, claim order, SKIP
// LOCKED claims, idempotent fires, leases on the database's clock, guarded
// outcomes, recovery, retention, the time form and the column caps).
// store runs it on SQLite, MySQL/MariaDB and PostgreSQL; a fourth database
// is supported once its store passes it.
//
// Run takes a constructor of fresh databases, as river's riverdrivertest
// takes its drivers. Every subtest asks for its own database, so subtests
// share nothing and may run in any order. The suite writes through the
// interfaces wherever they can write; for rows they cannot (a job running
// on a node, a heartbeat an hour old) it uses Stores.Exec, plain SQL with
// ? placeholders.
//
// chimedbtest imports chimedb, models and testify only, so a store in
// another module can run it.
package chimedbtest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Stores is one fresh database: migrated, with no rows, behind chimedb's
// interfaces. One value may implement several of them.
type Stores struct {
	Schedule chimedb.ScheduleStore
	Task     chimedb.TaskStore
	Cluster  chimedb.ClusterStore
	Admin    chimedb.AdminStore
	Console  chimedb.ConsoleStore
	// Alert is the alerting tables; nil skips its suite.
	Alert    chimedb.AlertStore
	Workflow chimedb.WorkflowStore

	// Exec runs one SQL statement on the database, for rows the
	// interfaces cannot write. Placeholders are ?, one value each: an
	// int64, an int, a string, a bool, nil, or a time.Time, which the
	// suite passes in UTC to the microsecond (chimedb.DBTime) and Exec
	// must write in the form the store writes times.
	Exec func(ctx context.Context, query string, args ...any) error

	// LockRow, when the database has row locks, locks the row of table
	// whose id is id in a transaction of its own and keeps it until
	// release is called. The suite uses it to show that fires and claims
	// pass over a row another transaction holds instead of waiting for it.
	// Nil for a database with a single writer (SQLite), where a held
	// transaction holds everything and those subtests are skipped.
	LockRow func(t *testing.T, table string, id int64) (release func())
}

// Run runs the whole suite. newStores is called once per subtest and must
// return a fresh database (see Stores); it should fail t, not return nil,
// when it cannot.
func Run(t *testing.T, newStores func(t *testing.T) *Stores) {
	t.Helper()
	for _, m := range methods() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range m.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(newEnv(t, newStores(t)))
				})
			}
		})
	}
}

// method is the suite of one interface method (or of a property that
// spans them, such as the time form): table-driven cases, each given a
// database of its own.
type method struct {
	name  string
	cases []tcase
}

type tcase struct {
	name string
	run  func(e *env)
}

// methods lists every method's suite. Each file of the package adds the
// suites of one interface.
func methods() []method {
	var all []method
	for _, group := range [][]method{scheduleMethods(), taskMethods(), leaseMethods(), clusterMethods(),
		adminStoreMethods(), adminQueryMethods(), consoleQueryMethods(), consoleStoreMethods(), formMethods(), alertMethods(), workflowMethods(),
		tokenMethods(), queueMethods(), secretMethods(), placementMethods(), broadcastMethods(), definitionRateMethods()} {
		all = append(all, group...)
	}
	return all
}

// Covered lists the interface methods the suite has cases for, as
// "Interface.Method" (the interface that declares it first, in the order
// ScheduleStore, TaskStore, LeaseStore, ClusterStore, AdminStore,
// AdminQueries, ConsoleStore, AlertStore, WorkflowStore).
func Covered() []string {
	var out []string
	for _, m := range methods() {
		if _, isProperty := properties[m.name]; !isProperty {
			out = append(out, m.name)
		}
	}
	slices.Sort(out)
	return out
}

// Declared lists every method chimedb's interfaces declare, named as in
// Covered.
func Declared() []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range []reflect.Type{
		reflect.TypeFor[chimedb.ScheduleStore](), reflect.TypeFor[chimedb.TaskStore](), reflect.TypeFor[chimedb.LeaseStore](),
		reflect.TypeFor[chimedb.ClusterStore](), reflect.TypeFor[chimedb.AdminStore](), reflect.TypeFor[chimedb.AdminQueries](),
		reflect.TypeFor[chimedb.ConsoleStore](), reflect.TypeFor[chimedb.AlertStore](), reflect.TypeFor[chimedb.WorkflowStore](),
	} {
		for i := range it.NumMethod() {
			name := it.Method(i).Name
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, it.Name()+"."+name)
		}
	}
	slices.Sort(out)
	return out
}

// properties are the suites that check a property across methods rather
// than one method.
var properties = map[string]bool{"TimeForm": true, "ColumnCaps": true, "Placement": true, "Broadcast": true, "DefinitionRate": true,
	"ScheduleStore.WriteFires (workflow runs)": true, "ScheduleStore.UnfinishedSchedules (workflow runs)": true,
	"WorkflowStore run notices": true}

// env is one case's database and the helpers that write its fixtures.
type env struct {
	t   *testing.T
	ctx context.Context
	*Stores
	admin chimedb.AdminQueries
	n     int // names of fixtures
}

func newEnv(t *testing.T, s *Stores) *env {
	t.Helper()
	require.NotNil(t, s, "newStores returned nil")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, Stores: s, admin: s.Admin.Admin()}
}

func (e *env) name(prefix string) string {
	e.n++
	return fmt.Sprintf("%s%d", prefix, e.n)
}

// exec runs SQL through Stores.Exec.
func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	require.NoError(e.t, e.Exec(e.ctx, q, args...), q)
}

// now is the database's clock.
func (e *env) now() time.Time {
	e.t.Helper()
	now, err := e.Cluster.DBNow(e.ctx)
	require.NoError(e.t, err)
	return now
}

// definition creates a job definition: a sleep task with one attempt
// that notifies nobody, changed by mods.
func (e *env) definition(mods ...func(d *models.JobDefinition)) *models.JobDefinition {
	e.t.Helper()
	d := &models.JobDefinition{Name: e.name("def"), TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever,
		Priority: models.PriorityDefault}
	for _, m := range mods {
		m(d)
	}
	require.NoError(e.t, e.admin.CreateDefinition(e.ctx, d))
	return d
}

// schedule creates an active interval schedule of definition def,
// changed by mods.
func (e *env) schedule(def int64, mods ...func(s *models.Schedule)) *models.Schedule {
	e.t.Helper()
	every := 60
	s := &models.Schedule{Name: e.name("sched"), JobDefinitionID: def, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
		Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
	for _, m := range mods {
		m(s)
	}
	require.NoError(e.t, e.admin.CreateSchedule(e.ctx, s))
	return s
}

// job inserts a pending job of definition def, due a minute before the
// database's now (due at any now a case takes after it), changed by mods
// (ScheduleID, RunAt, Priority, MaxAttempts, Params).
func (e *env) job(def int64, mods ...func(j *models.Job)) *models.Job {
	e.t.Helper()
	at := e.now().Add(-time.Minute)
	j := &models.Job{JobDefinitionID: def, ScheduledAt: at, RunAt: at}
	for _, m := range mods {
		m(j)
	}
	require.NoError(e.t, e.admin.InsertJob(e.ctx, j, "inserted by chimedbtest"))
	return j
}

// jobState is what setJob writes on a job the interfaces would only reach
// through a run: zero fields are left alone.
type jobState struct {
	status    models.JobStatus
	node      string
	attempt   int
	control   models.JobControl
	heartbeat *time.Time // also started_at
	queuedAt  *time.Time
	updatedAt *time.Time
	finished  *time.Time
}

// setJob writes st on job id with Exec.
func (e *env) setJob(id int64, st jobState) {
	e.t.Helper()
	set := func(col string, v any) { e.exec("UPDATE jobs SET "+col+" = ? WHERE id = ?", v, id) }
	if st.status != "" {
		set("status", string(st.status))
	}
	if st.node != "" {
		set("node_id", st.node)
	}
	if st.attempt != 0 {
		set("attempt", st.attempt)
	}
	if st.control != "" {
		set("control", string(st.control))
	}
	if st.heartbeat != nil {
		set("started_at", chimedb.DBTime(*st.heartbeat))
		set("heartbeat_at", chimedb.DBTime(*st.heartbeat))
	}
	if st.queuedAt != nil {
		set("queued_at", chimedb.DBTime(*st.queuedAt))
	}
	if st.finished != nil {
		set("finished_at", chimedb.DBTime(*st.finished))
	}
	// Last: every other write moves updated_at to now.
	if st.updatedAt != nil {
		set("updated_at", chimedb.DBTime(*st.updatedAt))
	}
}

// running inserts a job of def running on node at attempt, heartbeat now.
func (e *env) running(def int64, node string, attempt int, mods ...func(j *models.Job)) *models.Job {
	e.t.Helper()
	j := e.job(def, mods...)
	hb := e.now()
	e.setJob(j.ID, jobState{status: models.JobRunning, node: node, attempt: attempt, heartbeat: &hb, queuedAt: &hb})
	return e.get(j.ID)
}

// get reads job id.
func (e *env) get(id int64) *models.Job {
	e.t.Helper()
	j, err := e.admin.GetJob(e.ctx, id)
	require.NoError(e.t, err)
	return j
}

// logs reads every log line of job id, the derived success line included.
func (e *env) logs(id int64) []models.JobLog {
	e.t.Helper()
	out, err := e.admin.ListJobLogs(e.ctx, id, 0, 1000)
	require.NoError(e.t, err)
	return out
}

// node registers an alive node with the default id form hostname-pid.
func (e *env) node(id string) {
	e.t.Helper()
	require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: id, Hostname: "host", PID: 1, Version: "test", Roles: "worker"}))
}

// nodeRow reads node id; nil when it is gone.
func (e *env) nodeRow(id string) *models.Node {
	e.t.Helper()
	nodes, err := e.admin.ListNodes(e.ctx)
	require.NoError(e.t, err)
	for i := range nodes {
		if nodes[i].ID == id {
			return &nodes[i]
		}
	}
	return nil
}

// trigger reads the time_triggers row of schedule id; nil when it has none.
func (e *env) trigger(id int64) *models.TimeTrigger {
	e.t.Helper()
	m, err := e.admin.ScheduleTriggers(e.ctx, []int64{id})
	require.NoError(e.t, err)
	tr, ok := m[id]
	if !ok {
		return nil
	}
	return &tr
}

// notices lists the notifications of job id.
func (e *env) notices(id int64) []models.Notification {
	e.t.Helper()
	out, err := e.admin.ListNotifications(e.ctx, &chimedb.AdminListParams{Limit: 100}, id)
	require.NoError(e.t, err)
	return out
}

// missingID is an id no row of a fresh database has.
const missingID = int64(1) << 40

func ptr[T any](v T) *T { return &v }

// claimedIDs returns the ids of jobs, in order.
func claimedIDs(jobs []chimedb.ClaimedJob) []int64 {
	ids, _ := idsOf(jobs, nil, func(j *chimedb.ClaimedJob) int64 { return j.ID })
	return ids
}

// sameInstant fails unless got is want as the store writes it: UTC to
// the microsecond, compared as instants.
func sameInstant(t *testing.T, want time.Time, got time.Time, msgAndArgs ...any) {
	t.Helper()
	w := chimedb.DBTime(want)
	require.Truef(t, w.Equal(got), "want %s, got %s: %s", w.Format(time.RFC3339Nano), got.UTC().Format(time.RFC3339Nano), fmt.Sprint(msgAndArgs...))
}

// between fails unless lo <= got <= hi, allowing slack either side: a
// clock read by a coarser function than another (SQLite's strftime keeps
// milliseconds) may land a step apart.
func between(t *testing.T, lo, got, hi time.Time, slack time.Duration, what string) {
	t.Helper()
	require.Falsef(t, got.Before(lo.Add(-slack)), "%s %s is before %s", what, got.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano))
	require.Falsef(t, got.After(hi.Add(slack)), "%s %s is after %s", what, got.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
}

// clockStep is the coarsest step of a database clock the suite allows:
// SQLite's strftime('%f') keeps milliseconds.
const clockStep = time.Millisecond
