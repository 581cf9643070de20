package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// form is a submitted or prefilled form: values by field name (the API's
// JSON keys) and the errors shown beside them.
type form struct {
	Values url.Values
	Errors map[string]string
	// Top is an error that names no field of the form.
	Top string
}

func (f *form) Get(k string) string { return f.Values.Get(k) }

// fail records the API's (or the form's own) error at its field, or on top.
func (f *form) fail(field, msg string, fields []string) {
	for _, k := range fields {
		// "params.by" is the params field's, shown there.
		if k == field || strings.HasPrefix(field, k+".") {
			f.Errors[k] = msg
			return
		}
	}
	f.Top = msg
}

var scheduleFields = []string{"name", "job_definition_id", "workflow_id", "workflow", "schedule_type", "cron_expr", "cron_syntax", "dst_policy", "calendar_id", "interval_seconds", "run_at",
	"timezone", "start_at", "end_at", "max_runs", "misfire_policy", "catchup_window_seconds", "concurrency", "params", "status", "priority"}

var definitionFields = []string{"name", "task_type", "description", "default_params", "timeout_seconds", "max_attempts",
	"retry_backoff_seconds", "notify_on", "notify_emails", "requests_recovery", "priority"}

// localTimeLayout is what <input type="datetime-local"> sends.
const localTimeLayout = "2006-01-02T15:04"

// scheduleBody turns the form into the API's JSON body. It only converts:
// text to numbers, times and JSON. Whether the values make a valid
// schedule is the API's call. A field that does not convert is an error at
// that field.
func scheduleBody(f *form) map[string]any {
	v := f.Values
	body := map[string]any{}
	str := func(k string) {
		body[k] = strings.TrimSpace(v.Get(k))
	}
	str("name")
	str("timezone")
	str("misfire_policy")
	str("concurrency")
	str("status")
	str("schedule_type")
	// Absent (an older form): the API's default, or the stored value.
	for _, k := range []string{"cron_syntax", "dst_policy"} {
		if x := strings.TrimSpace(v.Get(k)); x != "" {
			body[k] = x
		}
	}
	num := func(k string) {
		s := strings.TrimSpace(v.Get(k))
		if s == "" {
			body[k] = nil
			return
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f.Errors[k] = "enter a whole number"
			return
		}
		body[k] = n
	}
	num("job_definition_id")
	if body["job_definition_id"] == nil {
		body["job_definition_id"] = 0
	}
	// A schedule of a workflow: the form's definition is ignored (a
	// schedule names exactly one), and so is its workflow otherwise.
	num("workflow_id")
	if body["workflow_id"] != nil {
		body["job_definition_id"] = 0
	}
	num("max_runs")
	num("catchup_window_seconds")
	num("calendar_id")
	num("priority") // empty: null, the definition's
	// Only the spec field of the chosen type is sent: the form keeps all
	// three inputs, the API refuses a spec of another type.
	typ := v.Get("schedule_type")
	body["cron_expr"], body["interval_seconds"], body["run_at"] = nil, nil, nil
	// In the schedule's own time zone, as an admin reads a wall clock.
	loc, err := time.LoadLocation(strings.TrimSpace(v.Get("timezone")))
	if err != nil || v.Get("timezone") == "" || v.Get("timezone") == "Local" {
		loc = time.UTC
	}
	when := func(k string) {
		s := strings.TrimSpace(v.Get(k))
		if s == "" {
			body[k] = nil
			return
		}
		t, err := time.ParseInLocation(localTimeLayout, s, loc)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, s); err != nil {
				f.Errors[k] = "enter a date and time such as 2030-01-02T15:04"
				return
			}
		}
		body[k] = t.UTC().Format(time.RFC3339)
	}
	switch typ {
	case string(models.ScheduleCron):
		body["cron_expr"] = strings.TrimSpace(v.Get("cron_expr"))
	case string(models.ScheduleInterval):
		num("interval_seconds")
	case string(models.ScheduleOnce):
		when("run_at")
	}
	when("start_at")
	when("end_at")
	jsonField(f, body, "params")
	return body
}

func jsonField(f *form, body map[string]any, k string) {
	s := strings.TrimSpace(f.Values.Get(k))
	if s == "" {
		body[k] = nil
		return
	}
	if !json.Valid([]byte(s)) {
		f.Errors[k] = "this is not valid JSON; write an object such as {\"seconds\": 5}"
		return
	}
	body[k] = json.RawMessage(s)
}

func definitionBody(f *form) map[string]any {
	v := f.Values
	body := map[string]any{}
	for _, k := range []string{"name", "task_type", "description", "notify_on", "notify_emails"} {
		body[k] = strings.TrimSpace(v.Get(k))
	}
	body["description"] = v.Get("description")
	for _, k := range []string{"timeout_seconds", "max_attempts", "retry_backoff_seconds", "priority"} {
		s := strings.TrimSpace(v.Get(k))
		switch {
		case s != "":
		case k == "priority":
			s = strconv.Itoa(models.PriorityDefault)
		default:
			s = "0"
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f.Errors[k] = "enter a whole number"
			continue
		}
		body[k] = n
	}
	body["requests_recovery"] = v.Get("requests_recovery") == "on"
	jsonField(f, body, "default_params")
	return body
}

func newForm(v url.Values) *form {
	return &form{Values: v, Errors: map[string]string{}}
}

// submit converts the posted form with toBody and sends it to the API.
// When it cannot, it shows the form again through show, at the field that
// did not convert (400) or at the API's field and status, and reports
// false; fields are the form's, the others' errors go on top.
func (c *Console) submit(r *http.Request, method, path string, toBody func(*form) map[string]any, fields []string,
	show func(status int, f *form),
) (*apiResult, bool) {
	f := newForm(r.PostForm)
	body := toBody(f)
	if len(f.Errors) > 0 {
		show(http.StatusBadRequest, f)
		return nil, false
	}
	res := c.callAPI(r.Context(), method, path, body)
	if !res.ok() {
		f.fail(res.Field, res.Err, fields)
		show(res.Status, f)
		return nil, false
	}
	return res, true
}

// callThen sends one bodiless call to the API and redirects to next, or
// shows the API's error.
func (c *Console) callThen(w http.ResponseWriter, r *http.Request, s *session, method, path, next string) {
	res := c.callAPI(r.Context(), method, path, nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

type scheduleFormData struct {
	F           *form
	ID          int64
	Definitions []models.JobDefinition
	Workflows   []models.Workflow
	Calendars   []models.Calendar
	Types       []string
	Syntaxes    []string
	DST         []string
	Misfire     []string
	Conc        []string
	Statuses    []string
}

func (c *Console) scheduleForm(w http.ResponseWriter, r *http.Request, s *session, status int, id int64, f *form) {
	defs, err := c.st.Admin().DefinitionChoices(r.Context())
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	cals, err := c.st.Admin().ListCalendars(r.Context())
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	var wfs []models.Workflow
	if ws, ok := c.st.(chimedb.WorkflowStore); ok {
		if wfs, err = ws.ListWorkflows(r.Context()); err != nil {
			c.dbFail(w, r, s, err)
			return
		}
	}
	title := "New schedule"
	if id != 0 {
		title = "Edit " + f.Get("name")
	}
	c.render(w, status, "schedule_form", &page{Title: title, Nav: "schedules", Session: s, Error: f.Top, Data: scheduleFormData{
		F: f, ID: id, Definitions: defs, Workflows: wfs, Calendars: cals, Types: []string{"cron", "interval", "once"},
		Syntaxes: []string{"standard", "quartz"}, DST: []string{"once", "skip", "both", "wall"},
		Misfire: []string{"fire_once", "skip", "fire_all"}, Conc: []string{"allow", "forbid"}, Statuses: []string{"active", "paused"},
	}})
}

func (c *Console) newSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	f := newForm(url.Values{})
	f.Values.Set("schedule_type", "cron")
	f.Values.Set("timezone", "UTC")
	f.Values.Set("cron_syntax", string(models.SyntaxStandard))
	f.Values.Set("dst_policy", string(models.DSTOnce))
	f.Values.Set("misfire_policy", string(models.MisfireFireOnce))
	f.Values.Set("concurrency", string(models.ConcurrencyAllow))
	f.Values.Set("status", string(models.ScheduleActive))
	f.Values.Set("job_definition_id", r.URL.Query().Get("definition"))
	f.Values.Set("workflow_id", r.URL.Query().Get("workflow"))
	c.scheduleForm(w, r, s, http.StatusOK, 0, f)
}

func (c *Console) createSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	res, ok := c.submit(r, http.MethodPost, api.Prefix+"/schedules", scheduleBody, scheduleFields, func(status int, f *form) {
		c.scheduleForm(w, r, s, status, 0, f)
	})
	if !ok {
		return
	}
	var row models.Schedule
	_ = res.decode(&row)
	http.Redirect(w, r, fmt.Sprintf("/schedules/%d?done=created", row.ID), http.StatusSeeOther)
}

// previewSchedule is the form's live preview: the API's dry run answers
// the next fire times, or the first error with its field.
func (c *Console) previewSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	f := newForm(r.PostForm)
	body := scheduleBody(f)
	out := struct {
		Fires []string `json:"fires"`
		Error string   `json:"error,omitempty"`
		Field string   `json:"field,omitempty"`
		// Hint says what the form still needs before a preview; no error.
		Hint string `json:"hint,omitempty"`
	}{Fires: []string{}}
	for k, msg := range f.Errors {
		out.Field, out.Error = k, msg
	}
	if out.Error == "" && body["job_definition_id"] == 0 && body["workflow_id"] == nil {
		// Nothing chosen yet: the API's "job_definition_id is required"
		// would greet an empty form as a mistake.
		out.Hint = "Choose a job definition or a workflow, then the next fire times show here."
	} else if out.Error == "" {
		// Name uniqueness is not part of the dry run, and an edit's own
		// name would clash with itself: any valid name will do.
		if body["name"] == "" {
			body["name"] = "preview"
		}
		res := c.callAPI(r.Context(), http.MethodPost, api.Prefix+"/schedules?dry_run=true", body)
		if res.ok() {
			var v struct {
				NextFires []time.Time `json:"next_fires"`
			}
			_ = res.decode(&v)
			for _, t := range v.NextFires {
				out.Fires = append(out.Fires, t.UTC().Format(time.RFC3339))
			}
		} else {
			out.Error, out.Field = res.Err, res.Field
		}
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// scheduleValues fills a form from a row, times in the schedule's zone.
func scheduleValues(sch *models.Schedule) url.Values {
	v := url.Values{}
	v.Set("name", sch.Name)
	if sch.JobDefinitionID != 0 {
		v.Set("job_definition_id", strconv.FormatInt(sch.JobDefinitionID, 10))
	}
	if sch.WorkflowID != nil {
		v.Set("workflow_id", strconv.FormatInt(*sch.WorkflowID, 10))
	}
	v.Set("schedule_type", string(sch.ScheduleType))
	v.Set("cron_expr", derefStr(sch.CronExpr))
	v.Set("cron_syntax", string(sch.CronSyntax))
	v.Set("dst_policy", string(sch.DSTPolicy))
	if sch.CalendarID != nil {
		v.Set("calendar_id", strconv.FormatInt(*sch.CalendarID, 10))
	}
	v.Set("interval_seconds", derefInt(sch.IntervalSeconds))
	loc, err := time.LoadLocation(sch.Timezone)
	if err != nil {
		loc = time.UTC
	}
	for k, t := range map[string]*time.Time{"run_at": sch.RunAt, "start_at": sch.StartAt, "end_at": sch.EndAt} {
		if t != nil {
			v.Set(k, t.In(loc).Format(localTimeLayout))
		}
	}
	v.Set("timezone", sch.Timezone)
	v.Set("max_runs", derefInt(sch.MaxRuns))
	v.Set("misfire_policy", string(sch.MisfirePolicy))
	v.Set("catchup_window_seconds", derefInt(sch.CatchupWindowSeconds))
	v.Set("concurrency", string(sch.Concurrency))
	v.Set("priority", derefInt(sch.Priority))
	v.Set("params", prettyJSON(sch.Params))
	status := sch.Status
	if status != models.ScheduleActive && status != models.SchedulePaused {
		// Saving an edit makes a completed or invalid schedule active, as
		// the API's PATCH does.
		status = models.ScheduleActive
	}
	v.Set("status", string(status))
	return v
}

func (c *Console) editSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	sch, ok := byID(c, w, r, s, "schedule", c.st.Admin().GetSchedule)
	if !ok {
		return
	}
	c.scheduleForm(w, r, s, http.StatusOK, sch.ID, newForm(scheduleValues(sch)))
}

func (c *Console) updateSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no schedule with this id.")
		return
	}
	_, ok = c.submit(r, http.MethodPatch, fmt.Sprintf("%s/schedules/%d", api.Prefix, id), scheduleBody, scheduleFields, func(status int, f *form) {
		c.scheduleForm(w, r, s, status, id, f)
	})
	if !ok {
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/schedules/%d?done=saved", id), http.StatusSeeOther)
}

type confirmData struct {
	What, Name, Action, Back string
}

func (c *Console) confirmDeleteSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	sch, ok := byID(c, w, r, s, "schedule", c.st.Admin().GetSchedule)
	if !ok {
		return
	}
	id := sch.ID
	c.render(w, http.StatusOK, "confirm", &page{Title: "Delete " + sch.Name, Nav: "schedules", Session: s, Data: confirmData{
		What: "schedule", Name: sch.Name, Action: fmt.Sprintf("/schedules/%d/delete", id), Back: fmt.Sprintf("/schedules/%d", id)}})
}

func (c *Console) deleteSchedule(w http.ResponseWriter, r *http.Request, s *session) {
	id, _ := pathID(r)
	c.callThen(w, r, s, http.MethodDelete, fmt.Sprintf("%s/schedules/%d", api.Prefix, id), "/schedules")
}

// scheduleAction is Pause, Resume and Trigger now.
func (c *Console) scheduleAction(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	action := r.PathValue("action")
	if !ok || (action != "pause" && action != "resume" && action != "trigger") {
		c.fail(w, r, s, http.StatusNotFound, "There is no such action.")
		return
	}
	res := c.callAPI(r.Context(), http.MethodPost, fmt.Sprintf("%s/schedules/%d/%s", api.Prefix, id, action), nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	if action == "trigger" {
		// A job, or for a schedule of a workflow a run (which has a
		// generation).
		var j struct {
			ID         int64 `json:"id"`
			Generation int   `json:"generation"`
		}
		_ = res.decode(&j)
		to := fmt.Sprintf("/jobs/%d", j.ID)
		if j.Generation > 0 {
			to = fmt.Sprintf("/runs/%d", j.ID)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/schedules/%d?done=%sd", id, action), http.StatusSeeOther)
}

// jobAction is Pause, Resume, Stop, Reset and Run again.
func (c *Console) jobAction(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	action := r.PathValue("action")
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no job with this id.")
		return
	}
	ctx := r.Context()
	switch action {
	case "pause", "resume", "stop", "reset":
		path := fmt.Sprintf("%s/jobs/%d/%s", api.Prefix, id, action)
		if action == "reset" && r.PostFormValue("force") == "on" {
			path += "?force=true"
		}
		c.callThen(w, r, s, http.MethodPost, path, fmt.Sprintf("/jobs/%d?done=%s", id, action))
	case "again":
		j, err := c.st.Admin().GetJob(ctx, id)
		if err != nil {
			c.notFoundOr(w, r, s, err, "job")
			return
		}
		if !j.Status.Finished() {
			c.fail(w, r, s, http.StatusConflict, fmt.Sprintf("Job %d is %s: run it again once it has finished.", id, j.Status))
			return
		}
		body := map[string]any{"job_definition_id": j.JobDefinitionID, "params": json.RawMessage(j.Params)}
		// Params the definition gives anyway are left out: a run with
		// params changes what runs, which an operator may not, and
		// running a job again as it was defined does not.
		if len(j.Params) == 0 || c.definitionGives(ctx, j.JobDefinitionID, j.Params) {
			body["params"] = nil
		}
		// The same job again: at the priority it ran with.
		if models.ValidPriority(int64(j.Priority)) {
			body["priority"] = j.Priority
		}
		res := c.callAPI(ctx, http.MethodPost, api.Prefix+"/jobs", body)
		if !res.ok() {
			c.fail(w, r, s, res.Status, res.Err)
			return
		}
		var nj models.Job
		_ = res.decode(&nj)
		http.Redirect(w, r, fmt.Sprintf("/jobs/%d", nj.ID), http.StatusSeeOther)
	default:
		c.fail(w, r, s, http.StatusNotFound, "There is no such action.")
	}
}

type definitionFormData struct {
	F        *form
	ID       int64
	Kinds    []string
	NotifyOn []string
}

func (c *Console) definitionForm(w http.ResponseWriter, s *session, status int, id int64, f *form) {
	title := "New job definition"
	if id != 0 {
		title = "Edit " + f.Get("name")
	}
	c.render(w, status, "definition_form", &page{Title: title, Nav: "definitions", Session: s, Error: f.Top, Data: definitionFormData{
		F: f, ID: id, Kinds: c.cfg.Registry.Kinds(), NotifyOn: []string{"never", "failure", "success", "always"},
	}})
}

func (c *Console) newDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	f := newForm(url.Values{})
	for k, v := range map[string]string{"max_attempts": "1", "retry_backoff_seconds": "10", "timeout_seconds": "0",
		"notify_on": "never", "requests_recovery": "on", "priority": strconv.Itoa(models.PriorityDefault)} {
		f.Values.Set(k, v)
	}
	c.definitionForm(w, s, http.StatusOK, 0, f)
}

func (c *Console) createDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	_, ok := c.submit(r, http.MethodPost, api.Prefix+"/definitions", definitionBody, definitionFields, func(status int, f *form) {
		c.definitionForm(w, s, status, 0, f)
	})
	if !ok {
		return
	}
	http.Redirect(w, r, "/definitions?done=created", http.StatusSeeOther)
}

func definitionValues(d *models.JobDefinition) url.Values {
	v := url.Values{}
	v.Set("name", d.Name)
	v.Set("task_type", d.TaskType)
	v.Set("description", d.Description)
	v.Set("default_params", prettyJSON(d.DefaultParams))
	v.Set("timeout_seconds", strconv.Itoa(d.TimeoutSeconds))
	v.Set("max_attempts", strconv.Itoa(d.MaxAttempts))
	v.Set("retry_backoff_seconds", strconv.Itoa(d.RetryBackoffSeconds))
	v.Set("notify_on", string(d.NotifyOn))
	v.Set("notify_emails", d.NotifyEmails)
	if d.RequestsRecovery {
		v.Set("requests_recovery", "on")
	}
	v.Set("priority", strconv.Itoa(d.Priority))
	return v
}

func (c *Console) editDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	d, ok := byID(c, w, r, s, "job definition", c.st.Admin().GetDefinition)
	if !ok {
		return
	}
	c.definitionForm(w, s, http.StatusOK, d.ID, newForm(definitionValues(d)))
}

func (c *Console) updateDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no job definition with this id.")
		return
	}
	_, ok = c.submit(r, http.MethodPatch, fmt.Sprintf("%s/definitions/%d", api.Prefix, id), definitionBody, definitionFields, func(status int, f *form) {
		c.definitionForm(w, s, status, id, f)
	})
	if !ok {
		return
	}
	http.Redirect(w, r, "/definitions?done=saved", http.StatusSeeOther)
}

func (c *Console) confirmDeleteDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	d, ok := byID(c, w, r, s, "job definition", c.st.Admin().GetDefinition)
	if !ok {
		return
	}
	c.render(w, http.StatusOK, "confirm", &page{Title: "Delete " + d.Name, Nav: "definitions", Session: s, Data: confirmData{
		What: "job definition", Name: d.Name, Action: fmt.Sprintf("/definitions/%d/delete", d.ID), Back: "/definitions"}})
}

func (c *Console) deleteDefinition(w http.ResponseWriter, r *http.Request, s *session) {
	id, _ := pathID(r)
	c.callThen(w, r, s, http.MethodDelete, fmt.Sprintf("%s/definitions/%d", api.Prefix, id), "/definitions?done=deleted")
}

// definitionGives says whether params are what the definition's defaults
// make of an empty params.
func (c *Console) definitionGives(ctx context.Context, defID int64, params models.JSON) bool {
	d, err := c.st.Admin().GetDefinition(ctx, defID)
	if err != nil {
		return false
	}
	merged, err := models.MergeParams(d.DefaultParams, nil)
	if err != nil {
		return false
	}
	var a, b any
	return json.Unmarshal(merged, &a) == nil && json.Unmarshal(params, &b) == nil && reflect.DeepEqual(a, b)
}

// queueAction pauses or resumes a queue through the API.
func (c *Console) queueAction(w http.ResponseWriter, r *http.Request, s *session) {
	action := r.PathValue("action")
	if action != "pause" && action != "resume" {
		c.fail(w, r, s, http.StatusNotFound, "There is no such action on a queue.")
		return
	}
	name := r.PathValue("name")
	c.callThen(w, r, s, http.MethodPost, api.Prefix+"/queues/"+url.PathEscape(name)+"/"+action, "/queues")
}

// nodeAction drains or undrains a node through the API.
func (c *Console) nodeAction(w http.ResponseWriter, r *http.Request, s *session) {
	action := r.PathValue("action")
	if action != "drain" && action != "undrain" {
		c.fail(w, r, s, http.StatusNotFound, "There is no such action on a node.")
		return
	}
	c.callThen(w, r, s, http.MethodPost, api.Prefix+"/nodes/"+url.PathEscape(r.PathValue("node"))+"/"+action, "/nodes")
}
