package chimedbtest

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func adminStoreMethods() []method {
	return []method{
		{"AdminStore.Admin", adminCases},
		{"AdminStore.ResetSilentJob", resetSilentJobCases},
		{"AdminStore.AskJobToStop", askJobToStopCases},
		{"AdminStore.Ping", pingCases},
	}
}

var adminCases = []tcase{
	{"returns the admin queries of the same database", func(e *env) {
		q := e.Admin.Admin()
		require.NotNil(e.t, q)
		d := e.definition()
		got, err := q.GetDefinition(e.ctx, d.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, d.Name, got.Name)
	}},
}

var resetSilentJobCases = []tcase{
	{"resets a job no live node looks after, and refuses one a live node runs", func(e *env) {
		d := e.definition()
		old := e.now().Add(-time.Hour)
		e.node("alive")
		e.node("dead")
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "dead", chimedb.NodeDead))
		e.node("silent")
		e.exec("UPDATE nodes SET heartbeat_at = ? WHERE id = ?", old, "silent")
		cases := []struct {
			name   string
			node   string
			silent bool // the job's own heartbeat and row are old
			ok     bool
		}{
			{"alive node, fresh job", "alive", false, false},
			{"dead node", "dead", false, true},
			{"node without a row", "unknown", false, true},
			{"node silent for the window", "silent", false, true},
			{"alive node, silent job", "alive", true, true},
		}
		for _, c := range cases {
			j := e.running(d.ID, c.node, 1)
			if c.silent {
				e.setJob(j.ID, jobState{heartbeat: &old, queuedAt: &old, updatedAt: &old})
			}
			got, err := e.Admin.ResetSilentJob(e.ctx, j.ID, "the test", time.Minute)
			if !c.ok {
				require.ErrorIs(e.t, err, chimedb.ErrJobState, c.name)
				require.Equal(e.t, models.JobRunning, e.get(j.ID).Status, c.name)
				continue
			}
			require.NoError(e.t, err, c.name)
			require.Equal(e.t, models.JobPending, got.Status, c.name)
			require.Empty(e.t, got.NodeID, c.name)
			require.Equal(e.t, 1, got.Attempt, c.name)
		}
	}},
	{"pending is returned as it is, finished is ErrJobState, missing ErrNotFound, a bad window an error", func(e *env) {
		d := e.definition()
		p := e.job(d.ID)
		got, err := e.Admin.ResetSilentJob(e.ctx, p.ID, "t", time.Minute)
		require.NoError(e.t, err)
		require.Equal(e.t, models.JobPending, got.Status)
		done := e.running(d.ID, "dead", 1)
		e.setJob(done.ID, jobState{status: models.JobFailed})
		_, err = e.Admin.ResetSilentJob(e.ctx, done.ID, "t", time.Minute)
		require.ErrorIs(e.t, err, chimedb.ErrJobState)
		_, err = e.Admin.ResetSilentJob(e.ctx, missingID, "t", time.Minute)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		r := e.running(d.ID, "dead", 1)
		_, err = e.Admin.ResetSilentJob(e.ctx, r.ID, "t", 0)
		require.Error(e.t, err)
		require.Equal(e.t, models.JobRunning, e.get(r.ID).Status)
	}},
}

var askJobToStopCases = []tcase{
	{"asks an active job to stop and logs it; leaves pending and finished jobs as they are", func(e *env) {
		d := e.definition()
		for _, st := range []models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused} {
			j := e.running(d.ID, "n1", 1)
			e.setJob(j.ID, jobState{status: st})
			got, err := e.Admin.AskJobToStop(e.ctx, j.ID, "the test")
			require.NoError(e.t, err)
			require.Equal(e.t, models.ControlStop, got.Control, st)
			require.Equal(e.t, st, got.Status, "status is the node's to change")
			require.Equal(e.t, models.ControlStop, e.get(j.ID).Control)
			e.hasLog(j.ID, "the test")
		}
		p := e.job(d.ID)
		got, err := e.Admin.AskJobToStop(e.ctx, p.ID, "t")
		require.NoError(e.t, err)
		require.Equal(e.t, models.JobPending, got.Status, "never canceled here")
		require.Equal(e.t, models.ControlNone, got.Control)
		done := e.running(d.ID, "n1", 1)
		e.setJob(done.ID, jobState{status: models.JobSucceeded})
		got, err = e.Admin.AskJobToStop(e.ctx, done.ID, "t")
		require.NoError(e.t, err)
		require.Equal(e.t, models.ControlNone, got.Control)
		_, err = e.Admin.AskJobToStop(e.ctx, missingID, "t")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var pingCases = []tcase{
	{"answers", func(e *env) { require.NoError(e.t, e.Admin.Ping(e.ctx)) }},
}

func adminQueryMethods() []method {
	return []method{
		{"AdminQueries.ListCalendars", listCalendarsCases},
		{"AdminQueries.GetCalendar", getCalendarCases},
		{"AdminQueries.GetCalendarByName", getCalendarByNameCases},
		{"AdminQueries.Calendars", calendarsCases},
		{"AdminQueries.CreateCalendar", createCalendarCases},
		{"AdminQueries.UpdateCalendar", updateCalendarCases},
		{"AdminQueries.DeleteCalendar", deleteCalendarCases},
		{"AdminQueries.ListDefinitions", listDefinitionsCases},
		{"AdminQueries.ListSchedules", listSchedulesCases},
		{"AdminQueries.ListJobs", listJobsCases},
		{"AdminQueries.ListJobLogs", listJobLogsCases},
		{"AdminQueries.ListNodes", listNodesCases},
		{"AdminQueries.ListConfigurations", listConfigurationsCases},
		{"AdminQueries.GetConfiguration", getConfigurationCases},
		{"AdminQueries.SetConfiguration", setConfigurationCases},
		{"AdminQueries.GetDefinition", getDefinitionCases},
		{"AdminQueries.CreateDefinition", createDefinitionCases},
		{"AdminQueries.UpdateDefinition", updateDefinitionCases},
		{"AdminQueries.DeleteDefinition", deleteDefinitionCases},
		{"AdminQueries.GetJob", getJobCases},
		{"AdminQueries.InsertJob", insertJobCases},
		{"AdminQueries.ControlJob", controlJobCases},
		{"AdminQueries.GetSchedule", getScheduleCases},
		{"AdminQueries.ScheduleTriggers", scheduleTriggersCases},
		{"AdminQueries.CreateSchedule", createScheduleCases},
		{"AdminQueries.UpdateSchedule", updateScheduleCases},
		{"AdminQueries.SetScheduleStatus", setScheduleStatusCases},
		{"AdminQueries.DeleteSchedule", deleteScheduleCases},
		{"AdminQueries.ListNotifications", listNotificationsCases},
	}
}

func (e *env) calendar(name string) *models.Calendar {
	e.t.Helper()
	c := &models.Calendar{Name: name, Kind: models.CalendarWeekly, Definition: models.JSON(`{"days":[1,7]}`), Timezone: "Europe/Paris",
		Description: "weekends"}
	require.NoError(e.t, e.admin.CreateCalendar(e.ctx, c))
	return c
}

func calendarNames(cs []models.Calendar) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

var listCalendarsCases = []tcase{
	{"lists every calendar by name", func(e *env) {
		got, err := e.admin.ListCalendars(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		for _, n := range []string{"b", "c", "a"} {
			e.calendar(n)
		}
		got, err = e.admin.ListCalendars(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, []string{"a", "b", "c"}, calendarNames(got))
	}},
}

// sameCalendar fails unless got is want as stored. updated_at is left to
// the callers: an update's is the store's (or the database's) to write.
func sameCalendar(t require.TestingT, want, got *models.Calendar) {
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.Kind, got.Kind)
	require.JSONEq(t, string(want.Definition), string(got.Definition))
	require.Equal(t, want.Timezone, got.Timezone)
	require.Equal(t, want.Description, got.Description)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created_at %s, stored %s", want.CreatedAt, got.CreatedAt)
}

var getCalendarCases = []tcase{
	{"reads a calendar by id; a missing one is ErrNotFound", func(e *env) {
		c := e.calendar("c")
		got, err := e.admin.GetCalendar(e.ctx, c.ID)
		require.NoError(e.t, err)
		sameCalendar(e.t, c, got)
		_, err = e.admin.GetCalendar(e.ctx, missingID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var getCalendarByNameCases = []tcase{
	{"reads a calendar by name; a missing one is ErrNotFound", func(e *env) {
		c := e.calendar("weekends")
		got, err := e.admin.GetCalendarByName(e.ctx, "weekends")
		require.NoError(e.t, err)
		sameCalendar(e.t, c, got)
		_, err = e.admin.GetCalendarByName(e.ctx, "Weekends ")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var calendarsCases = []tcase{
	{"returns the calendars of the ids that exist, by id", func(e *env) {
		a, b := e.calendar("a"), e.calendar("b")
		got, err := e.admin.Calendars(e.ctx, []int64{b.ID, a.ID, b.ID, missingID})
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		sameCalendar(e.t, a, got[a.ID])
		sameCalendar(e.t, b, got[b.ID])
		got, err = e.admin.Calendars(e.ctx, nil)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
}

var createCalendarCases = []tcase{
	{"fills id and times; a duplicate name is ErrConflict", func(e *env) {
		before := time.Now()
		c := e.calendar("c")
		require.NotZero(e.t, c.ID)
		between(e.t, before, c.CreatedAt, time.Now(), clockStep, "created_at")
		require.True(e.t, c.CreatedAt.Equal(c.UpdatedAt))
		err := e.admin.CreateCalendar(e.ctx, &models.Calendar{Name: "c", Kind: models.CalendarDaily, Definition: models.JSON(`{}`), Timezone: "UTC"})
		require.ErrorIs(e.t, err, chimedb.ErrConflict)
	}},
}

var updateCalendarCases = []tcase{
	{"writes every column; missing is ErrNotFound, a taken name ErrConflict", func(e *env) {
		c, other := e.calendar("c"), e.calendar("other")
		old := e.now().Add(-time.Hour)
		e.exec("UPDATE calendars SET updated_at = ? WHERE id = ?", old, c.ID)
		c.Name, c.Kind, c.Definition, c.Timezone, c.Description = "renamed", models.CalendarDaily, models.JSON(`{"from":"09:00","to":"17:00"}`), "UTC", "office"
		require.NoError(e.t, e.admin.UpdateCalendar(e.ctx, c))
		got, err := e.admin.GetCalendar(e.ctx, c.ID)
		require.NoError(e.t, err)
		sameCalendar(e.t, c, got)
		require.True(e.t, got.UpdatedAt.After(old), "updated_at moved: the engine sees the change by it")
		c.ID = missingID
		require.ErrorIs(e.t, e.admin.UpdateCalendar(e.ctx, c), chimedb.ErrNotFound)
		other.Name = "renamed"
		require.ErrorIs(e.t, e.admin.UpdateCalendar(e.ctx, other), chimedb.ErrConflict)
	}},
}

var deleteCalendarCases = []tcase{
	{"deletes an unused calendar; one a schedule names is ErrInUse, a missing one ErrNotFound", func(e *env) {
		free, used := e.calendar("free"), e.calendar("used")
		d := e.definition()
		e.schedule(d.ID, func(s *models.Schedule) { s.CalendarID = &used.ID })
		require.NoError(e.t, e.admin.DeleteCalendar(e.ctx, free.ID))
		_, err := e.admin.GetCalendar(e.ctx, free.ID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		require.ErrorIs(e.t, e.admin.DeleteCalendar(e.ctx, used.ID), chimedb.ErrInUse)
		_, err = e.admin.GetCalendar(e.ctx, used.ID)
		require.NoError(e.t, err)
		require.ErrorIs(e.t, e.admin.DeleteCalendar(e.ctx, free.ID), chimedb.ErrNotFound)
	}},
}

// pages walks list in pages of size, newest first, and returns the ids.
func pages(t require.TestingT, size int, list func(p *chimedb.AdminListParams) ([]int64, error)) []int64 {
	var out []int64
	before := int64(0)
	for range 100 {
		ids, err := list(&chimedb.AdminListParams{BeforeID: before, Limit: size})
		require.NoError(t, err)
		require.LessOrEqual(t, len(ids), size)
		out = append(out, ids...)
		if len(ids) < size {
			return out
		}
		before = ids[len(ids)-1]
	}
	require.Fail(t, "paging does not end")
	return nil
}

func reversed(ids []int64) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// idsOf returns the ids of rows, in order, with err.
func idsOf[T any](rows []T, err error, id func(*T) int64) ([]int64, error) {
	out := make([]int64, 0, len(rows))
	for i := range rows {
		out = append(out, id(&rows[i]))
	}
	return out, err
}

func (e *env) definitionIDs(p *chimedb.AdminListParams) ([]int64, error) {
	ds, err := e.admin.ListDefinitions(e.ctx, p)
	return idsOf(ds, err, func(d *models.JobDefinition) int64 { return d.ID })
}

func (e *env) scheduleIDs(p *chimedb.AdminListParams) ([]int64, error) {
	ss, err := e.admin.ListSchedules(e.ctx, p)
	return idsOf(ss, err, func(s *models.Schedule) int64 { return s.ID })
}

func (e *env) jobListIDs(p *chimedb.AdminListParams) ([]int64, error) {
	js, err := e.admin.ListJobs(e.ctx, p)
	return idsOf(js, err, func(j *models.Job) int64 { return j.ID })
}

// listed runs list with p and returns the ids.
func listed(t require.TestingT, list func(p *chimedb.AdminListParams) ([]int64, error), p chimedb.AdminListParams) []int64 {
	if p.Limit == 0 {
		p.Limit = 100
	}
	ids, err := list(&p)
	require.NoError(t, err)
	return ids
}

var listDefinitionsCases = []tcase{
	{"pages newest first and filters by name and created_at", func(e *env) {
		var ids []int64
		for range 5 {
			ids = append(ids, e.definition().ID)
		}
		require.Equal(e.t, reversed(ids), pages(e.t, 2, e.definitionIDs))
		base := e.now().Add(-time.Hour)
		for i, id := range ids {
			e.exec("UPDATE job_definitions SET created_at = ? WHERE id = ?", base.Add(time.Duration(i)*time.Minute), id)
		}
		d, err := e.admin.GetDefinition(e.ctx, ids[2])
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{ids[2]}, listed(e.t, e.definitionIDs, chimedb.AdminListParams{Name: d.Name}))
		require.Equal(e.t, []int64{ids[3], ids[2]}, listed(e.t, e.definitionIDs,
			chimedb.AdminListParams{Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)}), "Since inclusive, Until exclusive")
		require.Empty(e.t, listed(e.t, e.definitionIDs, chimedb.AdminListParams{Name: "nobody"}))
	}},
	{"NameContains takes the text literally", func(e *env) {
		ids := map[string]int64{}
		for _, n := range likeNames {
			ids[n] = e.definition(func(d *models.JobDefinition) { d.Name = n }).ID
		}
		checkNameContains(e, ids, e.definitionIDs)
	}},
}

// likeNames hold what LIKE and its escapes would take for patterns.
var likeNames = []string{"100% done", "1000 done", "a_b!c", "axb!c", `back\slash`, "plain"}

// checkNameContains lists by substrings of likeNames, which ids maps to
// their rows, and wants only the names that hold each one, newest first.
func checkNameContains(e *env, ids map[string]int64, list func(p *chimedb.AdminListParams) ([]int64, error)) {
	e.t.Helper()
	for _, q := range []string{"%", "0%", "_", "a_b", "!", "b!c", `\`, `\s`, "%d", "plain", "", "none"} {
		want := []int64{}
		for i := len(likeNames) - 1; i >= 0; i-- {
			if strings.Contains(likeNames[i], q) {
				want = append(want, ids[likeNames[i]])
			}
		}
		require.Equal(e.t, want, listed(e.t, list, chimedb.AdminListParams{NameContains: q}), "NameContains %q", q)
	}
	require.Equal(e.t, []int64{ids["axb!c"], ids["a_b!c"]}, listed(e.t, list, chimedb.AdminListParams{NameContains: "b", BeforeID: ids[`back\slash`]}),
		"with the page cursor")
}

var listSchedulesCases = []tcase{
	{"pages newest first and filters by name, status, definition and created_at", func(e *env) {
		d1, d2 := e.definition(), e.definition()
		a := e.schedule(d1.ID)
		b := e.schedule(d2.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		c := e.schedule(d1.ID)
		require.Equal(e.t, []int64{c.ID, b.ID, a.ID}, pages(e.t, 1, e.scheduleIDs))
		require.Equal(e.t, []int64{b.ID}, listed(e.t, e.scheduleIDs, chimedb.AdminListParams{Status: string(models.SchedulePaused)}))
		require.Equal(e.t, []int64{c.ID, a.ID}, listed(e.t, e.scheduleIDs, chimedb.AdminListParams{JobDefinitionID: d1.ID}))
		require.Equal(e.t, []int64{a.ID}, listed(e.t, e.scheduleIDs, chimedb.AdminListParams{Name: a.Name}))
		base := e.now().Add(-time.Hour)
		for i, id := range []int64{a.ID, b.ID, c.ID} {
			e.exec("UPDATE schedules SET created_at = ? WHERE id = ?", base.Add(time.Duration(i)*time.Minute), id)
		}
		require.Equal(e.t, []int64{b.ID}, listed(e.t, e.scheduleIDs, chimedb.AdminListParams{Since: base.Add(time.Minute), Until: base.Add(2 * time.Minute)}))
	}},
	{"NameContains takes the text literally", func(e *env) {
		d := e.definition()
		ids := map[string]int64{}
		for _, n := range likeNames {
			ids[n] = e.schedule(d.ID, func(s *models.Schedule) { s.Name = n }).ID
		}
		checkNameContains(e, ids, e.scheduleIDs)
	}},
}

var listJobsCases = []tcase{
	{"pages newest first and filters by status, schedule, definition and scheduled_at", func(e *env) {
		d1, d2 := e.definition(), e.definition()
		s := e.schedule(d1.ID)
		base := e.now().Add(-time.Hour)
		a := e.job(d1.ID, runAt(base), func(j *models.Job) { j.ScheduleID = &s.ID })
		b := e.job(d2.ID, runAt(base.Add(time.Minute)))
		c := e.job(d1.ID, runAt(base.Add(2*time.Minute)))
		e.setJob(c.ID, jobState{status: models.JobRunning, node: "n"})
		require.Equal(e.t, []int64{c.ID, b.ID, a.ID}, pages(e.t, 2, e.jobListIDs))
		require.Equal(e.t, []int64{c.ID}, listed(e.t, e.jobListIDs, chimedb.AdminListParams{Status: string(models.JobRunning)}))
		require.Equal(e.t, []int64{a.ID}, listed(e.t, e.jobListIDs, chimedb.AdminListParams{ScheduleID: s.ID}))
		require.Equal(e.t, []int64{c.ID, a.ID}, listed(e.t, e.jobListIDs, chimedb.AdminListParams{JobDefinitionID: d1.ID}))
		require.Equal(e.t, []int64{b.ID}, listed(e.t, e.jobListIDs, chimedb.AdminListParams{Since: base.Add(time.Minute), Until: base.Add(2 * time.Minute)}))
	}},
}

var listJobLogsCases = []tcase{
	{"lines come oldest first after a cursor, and a success's line last", func(e *env) {
		d := e.definition()
		j := e.running(d.ID, "n1", 1)
		var lines []models.JobLog
		for i := range 4 {
			lines = append(lines, models.JobLog{JobID: j.ID, Message: fmt.Sprint("line ", i)})
		}
		require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, lines))
		all := e.logs(j.ID)
		require.Len(e.t, all, 5, "the insert's line and four")
		for i := 1; i < len(all); i++ {
			require.Less(e.t, all[i-1].ID, all[i].ID)
		}
		page, err := e.admin.ListJobLogs(e.ctx, j.ID, all[1].ID, 2)
		require.NoError(e.t, err)
		require.Equal(e.t, []string{"line 1", "line 2"}, []string{page[0].Message, page[1].Message})

		e.complete("n1", chimedb.JobOutcome{ID: j.ID, Status: models.JobSucceeded, FinishedAt: e.now()})
		tail, err := e.admin.ListJobLogs(e.ctx, j.ID, all[4].ID, 10)
		require.NoError(e.t, err)
		require.Len(e.t, tail, 1)
		require.Equal(e.t, models.OutcomeLogID, tail[0].ID)
		require.Contains(e.t, tail[0].Message, "succeeded")
		more, err := e.admin.ListJobLogs(e.ctx, j.ID, models.OutcomeLogID, 10)
		require.NoError(e.t, err)
		require.Empty(e.t, more, "a follower at the end gets nothing more")
		none, err := e.admin.ListJobLogs(e.ctx, missingID, 0, 10)
		require.NoError(e.t, err)
		require.Empty(e.t, none)
	}},
}

var listNodesCases = []tcase{
	{"lists every node, the most recently started first", func(e *env) {
		base := e.now().Add(-time.Hour)
		for i, id := range []string{"b", "a", "c"} {
			e.node(id)
			e.exec("UPDATE nodes SET started_at = ? WHERE id = ?", base.Add(time.Duration(i)*time.Minute), id)
		}
		e.node("d")
		e.exec("UPDATE nodes SET started_at = ? WHERE id = ?", base.Add(time.Minute), "d") // as a's: by id
		nodes, err := e.admin.ListNodes(e.ctx)
		require.NoError(e.t, err)
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		require.Equal(e.t, []string{"c", "a", "d", "b"}, ids)
	}},
}

var listConfigurationsCases = []tcase{
	{"lists every setting by name", func(e *env) {
		for _, n := range []string{"zeta", "alpha"} {
			require.NoError(e.t, e.admin.SetConfiguration(e.ctx, &models.Configuration{Name: n, Value: "v"}))
		}
		got, err := e.admin.ListConfigurations(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		require.Equal(e.t, "alpha", got[0].Name)
		require.Equal(e.t, "zeta", got[1].Name)
	}},
}

var getConfigurationCases = []tcase{
	{"reads a setting; a missing one is ErrNotFound", func(e *env) {
		require.NoError(e.t, e.admin.SetConfiguration(e.ctx, &models.Configuration{Name: "k", Value: "v", Description: "d"}))
		got, err := e.admin.GetConfiguration(e.ctx, "k")
		require.NoError(e.t, err)
		require.Equal(e.t, "v", got.Value)
		require.Equal(e.t, "d", got.Description)
		_, err = e.admin.GetConfiguration(e.ctx, "nope")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var setConfigurationCases = []tcase{
	{"inserts, then replaces value and description", func(e *env) {
		require.NoError(e.t, e.admin.SetConfiguration(e.ctx, &models.Configuration{Name: "k", Value: "1", Description: "one"}))
		require.NoError(e.t, e.admin.SetConfiguration(e.ctx, &models.Configuration{Name: "k", Value: "2", Description: "two"}))
		got, err := e.admin.GetConfiguration(e.ctx, "k")
		require.NoError(e.t, err)
		require.Equal(e.t, "2", got.Value)
		require.Equal(e.t, "two", got.Description)
		all, err := e.admin.ListConfigurations(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, all, 1)
	}},
}

// fullDefinition sets every admin-owned column of a definition.
func fullDefinition(d *models.JobDefinition) {
	d.TaskType, d.Description, d.DefaultParams = "shell", "all columns", models.JSON(`{"cmd":"true"}`)
	d.TimeoutSeconds, d.MaxAttempts, d.RetryBackoffSeconds = 30, 4, 9
	d.NotifyOn, d.NotifyEmails, d.RequestsRecovery, d.Priority = models.NotifyFailure, "ops@example.com", true, 8
}

func sameDefinition(t require.TestingT, want, got *models.JobDefinition) {
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.TaskType, got.TaskType)
	require.Equal(t, want.Description, got.Description)
	require.JSONEq(t, string(want.DefaultParams), string(got.DefaultParams))
	require.Equal(t, want.TimeoutSeconds, got.TimeoutSeconds)
	require.Equal(t, want.MaxAttempts, got.MaxAttempts)
	require.Equal(t, want.RetryBackoffSeconds, got.RetryBackoffSeconds)
	require.Equal(t, want.NotifyOn, got.NotifyOn)
	require.Equal(t, want.NotifyEmails, got.NotifyEmails)
	require.Equal(t, want.RequestsRecovery, got.RequestsRecovery)
	require.Equal(t, want.Priority, got.Priority)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created_at")
}

var getDefinitionCases = []tcase{
	{"reads a definition by id; a missing one is ErrNotFound", func(e *env) {
		d := e.definition(fullDefinition)
		got, err := e.admin.GetDefinition(e.ctx, d.ID)
		require.NoError(e.t, err)
		sameDefinition(e.t, d, got)
		_, err = e.admin.GetDefinition(e.ctx, missingID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var createDefinitionCases = []tcase{
	{"fills id and times and keeps every column; a duplicate name is ErrConflict", func(e *env) {
		d := e.definition(fullDefinition)
		require.NotZero(e.t, d.ID)
		require.False(e.t, d.CreatedAt.IsZero())
		err := e.admin.CreateDefinition(e.ctx, &models.JobDefinition{Name: d.Name, TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever})
		require.ErrorIs(e.t, err, chimedb.ErrConflict)
	}},
	{"a zero priority takes the default", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.Priority = 0 })
		got, err := e.admin.GetDefinition(e.ctx, d.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, models.PriorityDefault, got.Priority)
	}},
}

var updateDefinitionCases = []tcase{
	{"writes every admin column; missing is ErrNotFound, a taken name ErrConflict", func(e *env) {
		d, other := e.definition(), e.definition()
		old := e.now().Add(-time.Hour)
		e.exec("UPDATE job_definitions SET updated_at = ? WHERE id = ?", old, d.ID)
		fullDefinition(d)
		d.Name = "renamed"
		require.NoError(e.t, e.admin.UpdateDefinition(e.ctx, d))
		got, err := e.admin.GetDefinition(e.ctx, d.ID)
		require.NoError(e.t, err)
		sameDefinition(e.t, d, got)
		require.True(e.t, got.UpdatedAt.After(old), "updated_at moved: the engine sees the change by it")
		other.Name = "renamed"
		require.ErrorIs(e.t, e.admin.UpdateDefinition(e.ctx, other), chimedb.ErrConflict)
		d.ID = missingID
		d.Name = "free"
		require.ErrorIs(e.t, e.admin.UpdateDefinition(e.ctx, d), chimedb.ErrNotFound)
	}},
}

var deleteDefinitionCases = []tcase{
	{"deletes a definition nothing unfinished uses; others are ErrInUse", func(e *env) {
		bySchedule, byJob, byFinished := e.definition(), e.definition(), e.definition()
		e.schedule(bySchedule.ID)
		e.job(byJob.ID)
		done := e.job(byFinished.ID)
		e.setJob(done.ID, jobState{status: models.JobSucceeded, node: "n"})
		require.ErrorIs(e.t, e.admin.DeleteDefinition(e.ctx, bySchedule.ID), chimedb.ErrInUse)
		require.ErrorIs(e.t, e.admin.DeleteDefinition(e.ctx, byJob.ID), chimedb.ErrInUse)
		require.NoError(e.t, e.admin.DeleteDefinition(e.ctx, byFinished.ID))
		_, err := e.admin.GetDefinition(e.ctx, byFinished.ID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		e.get(done.ID) // history stays
		require.ErrorIs(e.t, e.admin.DeleteDefinition(e.ctx, byFinished.ID), chimedb.ErrNotFound)
	}},
}

var getJobCases = []tcase{
	{"reads a job by id; a missing one is ErrNotFound", func(e *env) {
		d := e.definition()
		j := e.job(d.ID)
		got, err := e.admin.GetJob(e.ctx, j.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, j.ID, got.ID)
		require.Equal(e.t, d.ID, got.JobDefinitionID)
		_, err = e.admin.GetJob(e.ctx, missingID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var insertJobCases = []tcase{
	{"writes a pending job with a log line; a schedule's second job at one instant is ErrConflict", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.Priority = 2 })
		s := e.schedule(d.ID, func(s *models.Schedule) { s.Priority = ptr(9) })
		at := e.now().Add(time.Minute)
		j := &models.Job{ScheduleID: &s.ID, JobDefinitionID: d.ID, ScheduledAt: at, RunAt: at, Status: models.JobRunning,
			Control: models.ControlStop, MaxAttempts: 2, Params: models.JSON(`{"x":1}`)}
		require.NoError(e.t, e.admin.InsertJob(e.ctx, j, "run by the test"))
		require.NotZero(e.t, j.ID)
		got := e.get(j.ID)
		require.Equal(e.t, models.JobPending, got.Status, "always pending")
		require.Equal(e.t, models.ControlNone, got.Control)
		require.Equal(e.t, 9, got.Priority, "the schedule's priority")
		require.Equal(e.t, 2, got.MaxAttempts)
		require.JSONEq(e.t, `{"x":1}`, string(got.Params))
		sameInstant(e.t, at, got.ScheduledAt)
		e.hasLog(j.ID, "run by the test")
		dup := &models.Job{ScheduleID: &s.ID, JobDefinitionID: d.ID, ScheduledAt: at, RunAt: at}
		require.ErrorIs(e.t, e.admin.InsertJob(e.ctx, dup, "again"), chimedb.ErrConflict)
		adhoc := e.job(d.ID, runAt(at))
		adhoc2 := e.job(d.ID, runAt(at))
		require.NotEqual(e.t, adhoc.ID, adhoc2.ID, "ad hoc jobs at one instant are distinct")
		require.Equal(e.t, 2, e.get(adhoc.ID).Priority, "the definition's priority")
	}},
}

var controlJobCases = []tcase{
	{"records pause, resume and stop where the status allows them", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.NotifyOn, d.NotifyEmails = models.NotifyFailure, "ops@example.com" })
		cases := []struct {
			name        string
			status      models.JobStatus
			control     models.JobControl // before
			ask         models.JobControl
			err         error
			wantStatus  models.JobStatus
			wantControl models.JobControl
		}{
			{"pause queued", models.JobQueued, "", models.ControlPause, nil, models.JobQueued, models.ControlPause},
			{"pause running", models.JobRunning, "", models.ControlPause, nil, models.JobRunning, models.ControlPause},
			{"pause pending", models.JobPending, "", models.ControlPause, chimedb.ErrJobState, models.JobPending, ""},
			{"pause paused", models.JobPaused, "", models.ControlPause, chimedb.ErrJobState, models.JobPaused, ""},
			{"resume paused", models.JobPaused, "", models.ControlResume, nil, models.JobPaused, models.ControlResume},
			{"resume withdraws a pending pause", models.JobRunning, models.ControlPause, models.ControlResume, nil, models.JobRunning, ""},
			{"resume running", models.JobRunning, "", models.ControlResume, chimedb.ErrJobState, models.JobRunning, ""},
			{"stop running", models.JobRunning, "", models.ControlStop, nil, models.JobRunning, models.ControlStop},
			{"stop pending cancels", models.JobPending, "", models.ControlStop, nil, models.JobCanceled, ""},
			{"stop finished", models.JobSucceeded, "", models.ControlStop, chimedb.ErrJobState, models.JobSucceeded, ""},
		}
		for _, c := range cases {
			j := e.job(d.ID)
			if c.status != models.JobPending {
				e.setJob(j.ID, jobState{status: c.status, node: "n1", attempt: 1})
			}
			if c.control != "" {
				e.setJob(j.ID, jobState{control: c.control})
			}
			lines := len(e.logs(j.ID))
			got, err := e.admin.ControlJob(e.ctx, j.ID, c.ask)
			stored := e.get(j.ID)
			require.Equal(e.t, c.wantStatus, stored.Status, c.name)
			require.Equal(e.t, c.wantControl, stored.Control, c.name)
			if c.err != nil {
				require.ErrorIs(e.t, err, c.err, c.name)
				require.Len(e.t, e.logs(j.ID), lines, "%s: nothing logged", c.name)
				continue
			}
			require.NoError(e.t, err, c.name)
			require.Equal(e.t, *stored, *got, "%s: the row afterwards", c.name)
			require.Len(e.t, e.logs(j.ID), lines+1, "%s: logged", c.name)
			if c.wantStatus == models.JobCanceled {
				require.NotNil(e.t, stored.FinishedAt)
				require.Len(e.t, e.notices(j.ID), 1, "a cancel records its notice")
			}
		}
	}},
	{"an unknown control is an error; a missing job ErrNotFound", func(e *env) {
		d := e.definition()
		j := e.running(d.ID, "n1", 1)
		_, err := e.admin.ControlJob(e.ctx, j.ID, models.JobControl("explode"))
		require.Error(e.t, err)
		require.Equal(e.t, models.ControlNone, e.get(j.ID).Control)
		_, err = e.admin.ControlJob(e.ctx, missingID, models.ControlStop)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var getScheduleCases = []tcase{
	{"reads a schedule by id; a missing one is ErrNotFound", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		got := e.getSchedule(s.ID)
		require.Equal(e.t, s.Name, got.Name)
		_, err := e.admin.GetSchedule(e.ctx, missingID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var scheduleTriggersCases = []tcase{
	{"returns the trigger rows of the schedules that have one, by schedule id", func(e *env) {
		d := e.definition()
		a, b := e.schedule(d.ID), e.schedule(d.ID)
		next := e.now().Add(time.Minute)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: e.now(),
			Triggers: []chimedb.TriggerRow{{ScheduleID: a.ID, NextFireAt: &next}}}))
		got, err := e.admin.ScheduleTriggers(e.ctx, []int64{a.ID, b.ID, missingID})
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, a.ID, got[a.ID].ScheduleID)
		got, err = e.admin.ScheduleTriggers(e.ctx, nil)
		require.NoError(e.t, err)
		require.NotNil(e.t, got)
		require.Empty(e.t, got)
	}},
}

// fullSchedule sets every admin-owned column of a schedule.
func fullSchedule(cal int64, now time.Time) func(s *models.Schedule) {
	return func(s *models.Schedule) {
		start, end, at := now.Add(time.Hour), now.Add(48*time.Hour), now.Add(2*time.Hour)
		s.ScheduleType, s.CronExpr, s.CronSyntax, s.DSTPolicy = models.ScheduleCron, ptr("0 0 12 ? * MON-FRI"), models.SyntaxQuartz, models.DSTBoth
		s.IntervalSeconds, s.CalendarID, s.RunAt, s.Timezone = nil, &cal, &at, "America/New_York"
		s.StartAt, s.EndAt, s.MaxRuns, s.MisfirePolicy = &start, &end, ptr(10), models.MisfireFireAll
		s.CatchupWindowSeconds, s.Concurrency, s.Params, s.Priority = ptr(600), models.ConcurrencyForbid, models.JSON(`{"p":true}`), ptr(2)
		s.Status, s.StatusReason = models.SchedulePaused, "by the test"
	}
}

func sameSchedule(t require.TestingT, want, got *models.Schedule) {
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.JobDefinitionID, got.JobDefinitionID)
	require.Equal(t, want.ScheduleType, got.ScheduleType)
	require.Equal(t, want.CronExpr, got.CronExpr)
	require.Equal(t, want.CronSyntax, got.CronSyntax)
	require.Equal(t, want.DSTPolicy, got.DSTPolicy)
	require.Equal(t, want.CalendarID, got.CalendarID)
	require.Equal(t, want.IntervalSeconds, got.IntervalSeconds)
	for _, p := range [][2]*time.Time{{want.RunAt, got.RunAt}, {want.StartAt, got.StartAt}, {want.EndAt, got.EndAt}} {
		require.Equal(t, p[0] == nil, p[1] == nil)
		if p[0] != nil {
			require.True(t, chimedb.DBTime(*p[0]).Equal(*p[1]), "%s stored as %s", p[0], p[1])
		}
	}
	require.Equal(t, want.Timezone, got.Timezone)
	require.Equal(t, want.MaxRuns, got.MaxRuns)
	require.Equal(t, want.MisfirePolicy, got.MisfirePolicy)
	require.Equal(t, want.CatchupWindowSeconds, got.CatchupWindowSeconds)
	require.Equal(t, want.Concurrency, got.Concurrency)
	if len(want.Params) > 0 || len(got.Params) > 0 {
		require.JSONEq(t, string(want.Params), string(got.Params))
	}
	require.Equal(t, want.Status, got.Status)
	require.Equal(t, want.StatusReason, got.StatusReason)
	require.Equal(t, want.Priority, got.Priority)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created_at")
}

var createScheduleCases = []tcase{
	{"fills id and times, keeps every column and defaults syntax and DST policy", func(e *env) {
		d := e.definition()
		cal := e.calendar("c")
		s := e.schedule(d.ID, fullSchedule(cal.ID, e.now()))
		require.NotZero(e.t, s.ID)
		sameSchedule(e.t, s, e.getSchedule(s.ID))
		plain := e.schedule(d.ID, func(s *models.Schedule) { s.CronSyntax, s.DSTPolicy = "", "" })
		got := e.getSchedule(plain.ID)
		require.Equal(e.t, models.SyntaxStandard, got.CronSyntax)
		require.Equal(e.t, models.DSTOnce, got.DSTPolicy)
	}},
	{"a created_at given is kept", func(e *env) {
		d := e.definition()
		at := e.now().Add(-time.Hour)
		s := e.schedule(d.ID, func(s *models.Schedule) { s.CreatedAt = at })
		sameInstant(e.t, at, e.getSchedule(s.ID).CreatedAt)
	}},
	{"a missing definition is ErrNoDefinition, a missing calendar ErrNoCalendar, a taken name ErrConflict", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		every := 60
		mk := func(mod func(s *models.Schedule)) error {
			n := &models.Schedule{Name: e.name("s"), JobDefinitionID: d.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
				Timezone: "UTC", MisfirePolicy: models.MisfireSkip, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			mod(n)
			return e.admin.CreateSchedule(e.ctx, n)
		}
		require.ErrorIs(e.t, mk(func(n *models.Schedule) { n.JobDefinitionID = missingID }), chimedb.ErrNoDefinition)
		require.ErrorIs(e.t, mk(func(n *models.Schedule) { n.CalendarID = ptr(missingID) }), chimedb.ErrNoCalendar)
		require.ErrorIs(e.t, mk(func(n *models.Schedule) { n.Name = s.Name }), chimedb.ErrConflict)
		all, err := e.admin.ListSchedules(e.ctx, &chimedb.AdminListParams{Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, all, 1)
	}},
}

var updateScheduleCases = []tcase{
	{"writes every admin column; missing is ErrNotFound, a taken name ErrConflict, a missing definition ErrNoDefinition", func(e *env) {
		d := e.definition()
		cal := e.calendar("c")
		s, other := e.schedule(d.ID), e.schedule(d.ID)
		fullSchedule(cal.ID, e.now())(s)
		s.Name = "renamed"
		require.NoError(e.t, e.admin.UpdateSchedule(e.ctx, s))
		sameSchedule(e.t, s, e.getSchedule(s.ID))
		other.Name = "renamed"
		require.ErrorIs(e.t, e.admin.UpdateSchedule(e.ctx, other), chimedb.ErrConflict)
		other.Name, other.JobDefinitionID = "free", missingID
		require.ErrorIs(e.t, e.admin.UpdateSchedule(e.ctx, other), chimedb.ErrNoDefinition)
		other.JobDefinitionID, other.CalendarID = d.ID, ptr(missingID)
		require.ErrorIs(e.t, e.admin.UpdateSchedule(e.ctx, other), chimedb.ErrNoCalendar)
		other.CalendarID, other.ID = nil, missingID
		require.ErrorIs(e.t, e.admin.UpdateSchedule(e.ctx, other), chimedb.ErrNotFound)
	}},
}

var setScheduleStatusCases = []tcase{
	{"moves the status only from the statuses given, clearing the reason", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID, func(s *models.Schedule) { s.Status, s.StatusReason = models.ScheduleInvalid, "bad" })
		got, changed, err := e.admin.SetScheduleStatus(e.ctx, s.ID, models.ScheduleActive, models.SchedulePaused)
		require.NoError(e.t, err)
		require.False(e.t, changed)
		require.Equal(e.t, models.ScheduleInvalid, got.Status)
		require.Equal(e.t, "bad", got.StatusReason)
		got, changed, err = e.admin.SetScheduleStatus(e.ctx, s.ID, models.ScheduleActive, models.SchedulePaused, models.ScheduleInvalid)
		require.NoError(e.t, err)
		require.True(e.t, changed)
		require.Equal(e.t, models.ScheduleActive, got.Status)
		require.Empty(e.t, got.StatusReason)
		require.Equal(e.t, *got, *e.getSchedule(s.ID))
		_, _, err = e.admin.SetScheduleStatus(e.ctx, missingID, models.ScheduleActive, models.SchedulePaused)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var deleteScheduleCases = []tcase{
	{"deletes the schedule and its trigger; its jobs stay", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		j := e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID })
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: e.now(),
			Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID}}}))
		require.NoError(e.t, e.admin.DeleteSchedule(e.ctx, s.ID))
		_, err := e.admin.GetSchedule(e.ctx, s.ID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		require.Nil(e.t, e.trigger(s.ID))
		require.Equal(e.t, models.JobPending, e.get(j.ID).Status)
		require.ErrorIs(e.t, e.admin.DeleteSchedule(e.ctx, s.ID), chimedb.ErrNotFound)
	}},
}

var listNotificationsCases = []tcase{
	{"pages newest first and filters by job and status", func(e *env) {
		d := e.definition()
		a, b := e.job(d.ID), e.job(d.ID)
		for i, st := range []models.JobStatus{models.JobFailed, models.JobStopped} {
			e.exec("INSERT INTO notifications (job_id, job_status, attempt, recipients) VALUES (?, ?, ?, ?)", a.ID, string(st), i+1, "x@example.com")
		}
		e.exec("INSERT INTO notifications (job_id, job_status, attempt, recipients, status) VALUES (?, ?, ?, ?, ?)",
			b.ID, string(models.JobFailed), 1, "x@example.com", string(models.NotificationSent))
		list := func(p *chimedb.AdminListParams) ([]int64, error) {
			ns, err := e.admin.ListNotifications(e.ctx, p, 0)
			return idsOf(ns, err, func(n *models.Notification) int64 { return n.ID })
		}
		all := pages(e.t, 2, list)
		require.Len(e.t, all, 3)
		require.Greater(e.t, all[0], all[1])
		byA, err := e.admin.ListNotifications(e.ctx, &chimedb.AdminListParams{Limit: 10}, a.ID)
		require.NoError(e.t, err)
		require.Len(e.t, byA, 2)
		require.Equal(e.t, models.JobStopped, byA[0].JobStatus)
		sent, err := e.admin.ListNotifications(e.ctx, &chimedb.AdminListParams{Limit: 10, Status: string(models.NotificationSent)}, 0)
		require.NoError(e.t, err)
		require.Len(e.t, sent, 1)
		require.Equal(e.t, b.ID, sent[0].JobID)
	}},
}
