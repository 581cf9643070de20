package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

const pageSize = 50

// chartMinutes is how many minutes the overview's chart shows.
const chartMinutes = 60

var allJobStatuses = []models.JobStatus{
	models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused,
	models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled,
}

// listParams reads the page cursor the way the API does: the id to go below.
func listParams(q url.Values) *chimedb.AdminListParams {
	p := &chimedb.AdminListParams{Limit: pageSize + 1}
	if id, err := strconv.ParseInt(q.Get("cursor"), 10, 64); err == nil && id > 0 {
		p.BeforeID = id
	}
	return p
}

// nextCursor trims the extra row and says where the next page starts.
func nextCursor[T any](items []T, id func(*T) int64) ([]T, string) {
	if len(items) > pageSize {
		items = items[:pageSize]
		return items, strconv.FormatInt(id(&items[pageSize-1]), 10)
	}
	return items, ""
}

type overviewData struct {
	Hour, Day         map[models.JobStatus]int64
	Statuses          []models.JobStatus
	Minutes           []chimedb.MinuteCount
	MaxFires          int64
	Nodes             []nodeRow
	Leader            string
	Failures          []jobRow
	Now               time.Time
	TotalHour, TotalD int64
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	now := c.cfg.Now()
	d := overviewData{Statuses: allJobStatuses, Now: now}
	admin := c.st.Admin()
	var err error
	if d.Hour, err = admin.CountJobsByStatus(ctx, now.Add(-time.Hour)); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Day, err = admin.CountJobsByStatus(ctx, now.Add(-24*time.Hour)); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	for _, n := range d.Hour {
		d.TotalHour += n
	}
	for _, n := range d.Day {
		d.TotalD += n
	}
	// The last chartMinutes minutes, the current one last.
	first := now.UTC().Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	if d.Minutes, err = admin.CountJobsPerMinute(ctx, first, chartMinutes); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	for _, m := range d.Minutes {
		d.MaxFires = max(d.MaxFires, m.Fires)
	}
	if d.Nodes, d.Leader, err = c.nodeRows(r); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	failed, err := admin.ListJobs(ctx, &chimedb.AdminListParams{Status: string(models.JobFailed), Limit: 10})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Failures, err = c.jobRows(r, failed); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "overview", &page{Title: "Overview", Nav: "overview", Session: s, Data: d})
}

type nodeRow struct {
	models.Node
	Running   int64
	Leader    bool
	Maintains bool
	Silent    bool
	Age       string
}

func (c *Console) nodeRows(r *http.Request) ([]nodeRow, string, error) {
	ctx := r.Context()
	admin := c.st.Admin()
	nodes, err := admin.ListNodes(ctx)
	if err != nil {
		return nil, "", err
	}
	running, err := admin.CountRunningByNode(ctx)
	if err != nil {
		return nil, "", err
	}
	sched, err := c.st.GetLease(ctx, chimedb.SchedulerLease)
	if err != nil {
		return nil, "", err
	}
	maint, err := c.st.GetLease(ctx, chimedb.MaintenanceLease)
	if err != nil {
		return nil, "", err
	}
	leader := ""
	if sched.Live {
		leader = sched.Holder
	}
	now := c.cfg.Now()
	out := make([]nodeRow, len(nodes))
	for i, n := range nodes {
		out[i] = nodeRow{
			Node: n, Running: running[n.ID], Leader: leader == n.ID, Maintains: maint.Live && maint.Holder == n.ID,
			Silent: now.Sub(n.HeartbeatAt) > c.cfg.FailoverAfter, Age: ago(now, n.HeartbeatAt),
		}
	}
	return out, leader, nil
}

func (c *Console) nodes(w http.ResponseWriter, r *http.Request, s *session) {
	rows, leader, err := c.nodeRows(r)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "nodes", &page{Title: "Nodes", Nav: "nodes", Session: s, Data: struct {
		Nodes  []nodeRow
		Leader string
	}{rows, leader}})
}

type scheduleRow struct {
	models.Schedule
	Definition string
	Last       *models.Job
	Next       *time.Time
}

type schedulesData struct {
	Rows       []scheduleRow
	Q          string
	Status     string
	Statuses   []models.ScheduleStatus
	Query      url.Values
	NextCursor string
}

var scheduleStatuses = []models.ScheduleStatus{models.ScheduleActive, models.SchedulePaused, models.ScheduleCompleted, models.ScheduleInvalid}

func (c *Console) schedules(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	p := listParams(q)
	d := schedulesData{Q: q.Get("q"), Statuses: scheduleStatuses, Query: q}
	if st := q.Get("status"); slices.Contains(scheduleStatuses, models.ScheduleStatus(st)) {
		p.Status, d.Status = st, st
	}
	// The schedules table holds what admins wrote, small enough to scan
	// for a name.
	p.NameContains = d.Q
	rows, err := c.st.Admin().ListSchedules(ctx, p)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	rows, d.NextCursor = nextCursor(rows, func(s *models.Schedule) int64 { return s.ID })
	if d.Rows, err = c.scheduleRows(r, rows); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "schedules", &page{Title: "Schedules", Nav: "schedules", Session: s, Data: d})
}

func (c *Console) scheduleRows(r *http.Request, rows []models.Schedule) ([]scheduleRow, error) {
	ctx := r.Context()
	ids := make([]int64, len(rows))
	defIDs := make([]int64, 0, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
		defIDs = append(defIDs, rows[i].JobDefinitionID)
	}
	admin := c.st.Admin()
	last, err := admin.LastJobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	names, err := admin.DefinitionNames(ctx, defIDs)
	if err != nil {
		return nil, err
	}
	trig, err := admin.ScheduleTriggers(ctx, ids)
	if err != nil {
		return nil, err
	}
	cals, err := admin.Calendars(ctx, calendarIDs(rows))
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now()
	out := make([]scheduleRow, len(rows))
	for i := range rows {
		out[i] = scheduleRow{Schedule: rows[i], Definition: names[rows[i].JobDefinitionID]}
		if j, ok := last[rows[i].ID]; ok {
			out[i].Last = &j
		}
		if rows[i].Status == models.ScheduleActive {
			if f := fires(&rows[i], trig, cals, now, 1, 0); len(f) > 0 {
				out[i].Next = &f[0]
			}
		}
	}
	return out, nil
}

// fires is the API's next fire times of a schedule, up to n, honouring the
// runs it has left, less used (a resume's catch-up uses runs up), and its
// calendar (cals by id).
func fires(s *models.Schedule, trig map[int64]models.TimeTrigger, cals map[int64]*models.Calendar, now time.Time, n, used int) []time.Time {
	if s.Status != models.ScheduleActive && s.Status != models.SchedulePaused {
		return nil
	}
	var cal *models.Calendar
	if s.CalendarID != nil {
		cal = cals[*s.CalendarID]
	}
	t, err := trigger.New(s, cal)
	if err != nil {
		return nil
	}
	if tt, ok := trig[s.ID]; ok && tt.RemainingCount != nil {
		n = min(n, max(int(max(*tt.RemainingCount, 0))-used, 0))
	} else if s.MaxRuns != nil {
		n = min(n, max(*s.MaxRuns-used, 0))
	}
	return api.NextFires(t, now, n)
}

type scheduleData struct {
	S          *models.Schedule
	Definition *models.JobDefinition
	// CatchUp is what resuming a paused schedule now writes at once; nil
	// when nothing.
	CatchUp *api.CatchUpOnResume
	Fires   []time.Time
	Jobs    []jobRow
	Spec    string
	Done    string
}

func pathID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// byID reads the row the path's id names with get; without one it
// answers 404 (no such id) or 500 itself and returns false.
func byID[T any](c *Console, w http.ResponseWriter, r *http.Request, s *session, what string,
	get func(context.Context, int64) (*T, error)) (*T, bool) {
	id, ok := pathID(r)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no "+what+" with this id.")
		return nil, false
	}
	v, err := get(r.Context(), id)
	if err != nil {
		c.notFoundOr(w, r, s, err, what)
		return nil, false
	}
	return v, true
}

func (c *Console) notFoundOr(w http.ResponseWriter, r *http.Request, s *session, err error, what string) {
	if errors.Is(err, chimedb.ErrNotFound) {
		c.fail(w, r, s, http.StatusNotFound, "There is no "+what+" with this id.")
		return
	}
	c.dbFail(w, r, s, err)
}

func (c *Console) schedule(w http.ResponseWriter, r *http.Request, s *session) {
	sch, ok := byID(c, w, r, s, "schedule", c.st.Admin().GetSchedule)
	if !ok {
		return
	}
	id := sch.ID
	ctx := r.Context()
	admin := c.st.Admin()
	d := scheduleData{S: sch, Spec: specWords(sch), Done: doneWords[r.URL.Query().Get("done")]}
	if def, err := admin.GetDefinition(ctx, sch.JobDefinitionID); err == nil {
		d.Definition = def
	} else if !errors.Is(err, chimedb.ErrNotFound) {
		c.dbFail(w, r, s, err)
		return
	}
	trig, err := admin.ScheduleTriggers(ctx, []int64{id})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	cals, err := admin.Calendars(ctx, calendarIDs([]models.Schedule{*sch}))
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	used := 0
	if sch.Status == models.SchedulePaused {
		if d.CatchUp, err = c.catchUpOnResume(ctx, id); err != nil {
			c.dbFail(w, r, s, err)
			return
		}
		if d.CatchUp != nil {
			used = d.CatchUp.Jobs
		}
	}
	d.Fires = fires(sch, trig, cals, c.cfg.Now(), 10, used)
	jobs, err := admin.ScheduleJobs(ctx, id, 20)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Jobs, err = c.jobRows(r, jobs); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "schedule", &page{Title: sch.Name, Nav: "schedules", Session: s, Flash: d.Done, Data: d})
}

// catchUpOnResume asks the API's show of a schedule what resuming it now
// writes at once: the schedule engine's own answer, with the engine
// settings the API has.
func (c *Console) catchUpOnResume(ctx context.Context, id int64) (*api.CatchUpOnResume, error) {
	res := c.callAPI(ctx, http.MethodGet, fmt.Sprintf("%s/schedules/%d", api.Prefix, id), nil)
	if res.Status == http.StatusNotFound {
		return nil, nil // deleted meanwhile
	}
	if !res.ok() {
		return nil, fmt.Errorf("show schedule %d: %d %s", id, res.Status, res.Err)
	}
	var v api.ScheduleView
	if err := res.decode(&v); err != nil {
		return nil, fmt.Errorf("show schedule %d: %w", id, err)
	}
	return v.CatchUpOnResume, nil
}

// doneWords are the fixed messages a redirect after an action may show;
// the query names one, so a link cannot make the page say anything else.
var doneWords = map[string]string{
	"created": "Saved.", "saved": "Saved.", "paused": "Paused.", "resumed": "Resumed.", "deleted": "Deleted.",
	"stop":  "Stop requested: the node running the job acts on it within its control interval.",
	"pause": "Pause requested.", "resume": "Resume requested.", "reset": "Reset.",
}

type jobRow struct {
	models.Job
	Definition string
	Schedule   string
}

func (c *Console) jobRows(r *http.Request, jobs []models.Job) ([]jobRow, error) {
	var defIDs, schIDs []int64
	for i := range jobs {
		defIDs = append(defIDs, jobs[i].JobDefinitionID)
		if jobs[i].ScheduleID != nil {
			schIDs = append(schIDs, *jobs[i].ScheduleID)
		}
	}
	admin := c.st.Admin()
	defs, err := admin.DefinitionNames(r.Context(), slices.Compact(slices.Sorted(slices.Values(defIDs))))
	if err != nil {
		return nil, err
	}
	schs, err := admin.ScheduleNames(r.Context(), slices.Compact(slices.Sorted(slices.Values(schIDs))))
	if err != nil {
		return nil, err
	}
	out := make([]jobRow, len(jobs))
	for i := range jobs {
		out[i] = jobRow{Job: jobs[i], Definition: defs[jobs[i].JobDefinitionID]}
		if jobs[i].ScheduleID != nil {
			out[i].Schedule = schs[*jobs[i].ScheduleID]
		}
	}
	return out, nil
}

type jobsData struct {
	Rows        []jobRow
	Status      string
	Statuses    []models.JobStatus
	Definitions []models.JobDefinition
	Definition  int64
	Schedule    int64
	ScheduleNm  string
	Since       string
	Sinces      []struct{ Key, Label string }
	Query       url.Values
	NextCursor  string
	First       bool
}

var sinceChoices = []struct {
	Key, Label string
	D          time.Duration
}{{"15m", "last 15 minutes", 15 * time.Minute}, {"1h", "last hour", time.Hour}, {"24h", "last day", 24 * time.Hour}, {"7d", "last 7 days", 7 * 24 * time.Hour}}

func (c *Console) jobs(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	p := listParams(q)
	d := jobsData{Statuses: allJobStatuses, Query: q, First: p.BeforeID == 0}
	if st := q.Get("status"); slices.Contains(allJobStatuses, models.JobStatus(st)) {
		p.Status, d.Status = st, st
	}
	if id, err := strconv.ParseInt(q.Get("definition"), 10, 64); err == nil && id > 0 {
		p.JobDefinitionID, d.Definition = id, id
	}
	if id, err := strconv.ParseInt(q.Get("schedule"), 10, 64); err == nil && id > 0 {
		p.ScheduleID, d.Schedule = id, id
	}
	for _, ch := range sinceChoices {
		d.Sinces = append(d.Sinces, struct{ Key, Label string }{ch.Key, ch.Label})
		if q.Get("since") == ch.Key {
			p.Since, d.Since = c.cfg.Now().Add(-ch.D), ch.Key
		}
	}
	jobs, err := c.st.Admin().ListJobs(ctx, p)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	jobs, d.NextCursor = nextCursor(jobs, func(j *models.Job) int64 { return j.ID })
	if d.Rows, err = c.jobRows(r, jobs); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Definitions, err = c.st.Admin().DefinitionChoices(ctx); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Schedule != 0 {
		names, err := c.st.Admin().ScheduleNames(ctx, []int64{d.Schedule})
		if err != nil {
			c.dbFail(w, r, s, err)
			return
		}
		d.ScheduleNm = names[d.Schedule]
	}
	c.render(w, http.StatusOK, "jobs", &page{Title: "Jobs", Nav: "jobs", Session: s, Data: d})
}

type jobData struct {
	J        jobRow
	Can      jobActions
	Timeline []timelineEntry
	Logs     []models.JobLog
	LastLog  int64
	More     bool
	Done     string
}

type timelineEntry struct {
	At   *time.Time
	What string
}

const logPage = 500

func (c *Console) job(w http.ResponseWriter, r *http.Request, s *session) {
	j, ok := byID(c, w, r, s, "job", c.st.Admin().GetJob)
	if !ok {
		return
	}
	id := j.ID
	ctx := r.Context()
	admin := c.st.Admin()
	rows, err := c.jobRows(r, []models.Job{*j})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	d := jobData{J: rows[0], Done: doneWords[r.URL.Query().Get("done")]}
	if d.Can, err = c.jobActions(r, j); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	logs, err := admin.ListJobLogs(ctx, id, 0, logPage+1)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if len(logs) > logPage {
		logs, d.More = logs[:logPage], true
	}
	d.Logs = logs
	if n := len(logs); n > 0 {
		d.LastLog = logs[n-1].ID
	}
	at := func(t time.Time) *time.Time { return &t }
	d.Timeline = append(d.Timeline, timelineEntry{at(j.CreatedAt), "created"}, timelineEntry{at(j.RunAt), "due"})
	if j.QueuedAt != nil {
		d.Timeline = append(d.Timeline, timelineEntry{j.QueuedAt, "queued on node " + orDash(j.NodeID)})
	}
	if j.StartedAt != nil {
		d.Timeline = append(d.Timeline, timelineEntry{j.StartedAt, "started, attempt " + strconv.Itoa(j.Attempt)})
	}
	if j.HeartbeatAt != nil && !j.Status.Finished() {
		d.Timeline = append(d.Timeline, timelineEntry{j.HeartbeatAt, "last heartbeat"})
	}
	if j.FinishedAt != nil {
		d.Timeline = append(d.Timeline, timelineEntry{j.FinishedAt, "finished: " + statusWords(j.Status)})
	}
	slices.SortStableFunc(d.Timeline, func(a, b timelineEntry) int { return a.At.Compare(*b.At) })
	c.render(w, http.StatusOK, "job", &page{Title: "Job " + strconv.FormatInt(id, 10), Nav: "jobs", Session: s, Flash: d.Done, Data: d})
}

// jobActions are the actions a job's page offers: those its state allows.
// The API (and, for Run again, jobAction) still refuses the others.
type jobActions struct {
	Pause, Resume, Stop, Again, Reset, ForceReset bool
}

func (c *Console) jobActions(r *http.Request, j *models.Job) (jobActions, error) {
	var a jobActions
	live := j.Status == models.JobQueued || j.Status == models.JobRunning || j.Status == models.JobPaused
	if j.Status.Finished() {
		a.Again = true
		return a, nil
	}
	silent := false
	if live {
		var err error
		if silent, err = c.silent(r, j); err != nil {
			return a, err
		}
	}
	if live && j.Control == models.ControlStop {
		// Asked to stop and still not stopped: what is left is a reset,
		// forced while its node still looks after it.
		a.Reset, a.ForceReset = silent, !silent
		return a, nil
	}
	a.Pause = (j.Status == models.JobQueued || j.Status == models.JobRunning) && j.Control != models.ControlPause
	a.Resume = (j.Status == models.JobPaused && j.Control != models.ControlResume) || j.Control == models.ControlPause
	a.Stop = true
	a.Reset = live && silent
	return a, nil
}

// silent tells whether a queued, running or paused job has lost its node:
// the node is gone, not alive or silent past the failover window, or the
// job itself was not heard from within it. It is the rule the API's reset
// applies (a store's reset) on the console's clock; the API judges
// again on the database's.
func (c *Console) silent(r *http.Request, j *models.Job) (bool, error) {
	if j.NodeID == "" {
		return true, nil
	}
	nodes, err := c.st.Admin().ListNodes(r.Context())
	if err != nil {
		return false, err
	}
	now := c.cfg.Now()
	i := slices.IndexFunc(nodes, func(n models.Node) bool { return n.ID == j.NodeID })
	if i < 0 || nodes[i].Status != chimedb.NodeAlive || now.Sub(nodes[i].HeartbeatAt) > c.cfg.FailoverAfter {
		return true, nil
	}
	return now.Sub(chimedb.JobLastHeard(j)) > c.cfg.FailoverAfter, nil
}

// jobLog is the live follow: the lines after ?after=, and the job's status
// so the page knows when to stop asking. JSON, shown with textContent.
func (c *Console) jobLog(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	if !ok {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	ctx := r.Context()
	admin := c.st.Admin()
	j, err := admin.GetJob(ctx, id)
	if err != nil {
		if errors.Is(err, chimedb.ErrNotFound) {
			http.Error(w, "no such job", http.StatusNotFound)
			return
		}
		c.log.WithError(err).Error("console: read job")
		http.Error(w, "database error", http.StatusInternalServerError)
		return
	}
	logs, err := admin.ListJobLogs(ctx, id, max(after, 0), logPage)
	if err != nil {
		c.log.WithError(err).Error("console: read job log")
		http.Error(w, "database error", http.StatusInternalServerError)
		return
	}
	type line struct {
		ID      int64  `json:"id"`
		At      string `json:"at"`
		Level   string `json:"level"`
		Message string `json:"message"`
	}
	out := struct {
		Status   string `json:"status"`
		Words    string `json:"words"`
		Finished bool   `json:"finished"`
		Lines    []line `json:"lines"`
	}{Status: string(j.Status), Words: jobStatusWords(*j), Finished: j.Status.Finished(), Lines: []line{}}
	for _, l := range logs {
		out.Lines = append(out.Lines, line{l.ID, l.CreatedAt.UTC().Format(time.RFC3339Nano), l.Level, l.Message})
	}
	writeJSON(w, out)
}

func (c *Console) definitions(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := listParams(q)
	defs, err := c.st.Admin().ListDefinitions(r.Context(), p)
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	defs, next := nextCursor(defs, func(d *models.JobDefinition) int64 { return d.ID })
	c.render(w, http.StatusOK, "definitions", &page{Title: "Definitions", Nav: "definitions", Session: s,
		Flash: doneWords[q.Get("done")], Data: struct {
			Rows       []models.JobDefinition
			NextCursor string
			Query      url.Values
		}{defs, next, q}})
}

func calendarIDs(rows []models.Schedule) []int64 {
	var ids []int64
	for i := range rows {
		if rows[i].CalendarID != nil {
			ids = append(ids, *rows[i].CalendarID)
		}
	}
	return ids
}

type definitionData struct {
	D         *models.JobDefinition
	Schedules []scheduleRow
	More      bool // more schedules than shown
	Jobs      []jobRow
}

// definitionShown is how many of a definition's schedules its page lists.
const definitionShown = 50

// definition is a job definition's page: its fields, its schedules and
// its recent jobs.
func (c *Console) definition(w http.ResponseWriter, r *http.Request, s *session) {
	def, ok := byID(c, w, r, s, "job definition", c.st.Admin().GetDefinition)
	if !ok {
		return
	}
	id := def.ID
	ctx := r.Context()
	admin := c.st.Admin()
	d := definitionData{D: def}
	scheds, err := admin.ListSchedules(ctx, &chimedb.AdminListParams{JobDefinitionID: id, Limit: definitionShown + 1})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if len(scheds) > definitionShown {
		scheds, d.More = scheds[:definitionShown], true
	}
	if d.Schedules, err = c.scheduleRows(r, scheds); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	jobs, err := admin.ListJobs(ctx, &chimedb.AdminListParams{JobDefinitionID: id, Limit: 20})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	if d.Jobs, err = c.jobRows(r, jobs); err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "definition", &page{Title: def.Name, Nav: "definitions", Session: s,
		Flash: doneWords[r.URL.Query().Get("done")], Data: d})
}

// queues lists the queues with their jobs and limits, and a pause or
// resume button each.
func (c *Console) queues(w http.ResponseWriter, r *http.Request, s *session) {
	qs, err := c.st.Admin().ListQueues(r.Context())
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "queues", &page{Title: "Queues", Nav: "queues", Session: s, Data: struct {
		Queues []chimedb.QueueState
	}{qs}})
}
