package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/mail"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/trigger"
)

// Column sizes from sql/mysql/00001_init.sql: a longer value would be cut
// or refused by MySQL, so it is refused here with a clear message first.
const (
	maxName        = 191
	maxDescription = 2048
	maxEmails      = 2048
	maxCronExpr    = 255
	maxTimezone    = 64
	maxConfigValue = 65535 // TEXT
)

// definitionRequest is the writable part of a job_definitions row.
type definitionRequest struct {
	Name                string          `json:"name"`
	TaskType            string          `json:"task_type"`
	Description         string          `json:"description"`
	DefaultParams       json.RawMessage `json:"default_params"`
	TimeoutSeconds      int64           `json:"timeout_seconds"`
	MaxAttempts         int64           `json:"max_attempts"`
	RetryBackoffSeconds int64           `json:"retry_backoff_seconds"`
	NotifyOn            models.NotifyOn `json:"notify_on"`
	NotifyEmails        string          `json:"notify_emails"`
	RequestsRecovery    bool            `json:"requests_recovery"`
	Priority            int64           `json:"priority"`
}

// newDefinitionRequest holds the column defaults a create starts from.
func newDefinitionRequest() *definitionRequest {
	return &definitionRequest{MaxAttempts: 1, RetryBackoffSeconds: 10, NotifyOn: models.NotifyNever, RequestsRecovery: true,
		Priority: models.PriorityDefault}
}

func definitionRequestOf(d *models.JobDefinition) *definitionRequest {
	return &definitionRequest{
		Name: d.Name, TaskType: d.TaskType, Description: d.Description, DefaultParams: json.RawMessage(d.DefaultParams),
		TimeoutSeconds: int64(d.TimeoutSeconds), MaxAttempts: int64(d.MaxAttempts), RetryBackoffSeconds: int64(d.RetryBackoffSeconds),
		NotifyOn: d.NotifyOn, NotifyEmails: d.NotifyEmails, RequestsRecovery: d.RequestsRecovery, Priority: int64(d.Priority),
	}
}

// scheduleRequest is the writable part of a schedules row.
type scheduleRequest struct {
	Name            string              `json:"name"`
	JobDefinitionID int64               `json:"job_definition_id"`
	ScheduleType    models.ScheduleType `json:"schedule_type"`
	CronExpr        *string             `json:"cron_expr"`
	CronSyntax      models.CronSyntax   `json:"cron_syntax"`
	DSTPolicy       models.DSTPolicy    `json:"dst_policy"`
	CalendarID      *int64              `json:"calendar_id"`
	// Calendar names the calendar instead of calendar_id; "" clears it.
	Calendar             *string               `json:"calendar"`
	IntervalSeconds      *int64                `json:"interval_seconds"`
	RunAt                *time.Time            `json:"run_at"`
	Timezone             string                `json:"timezone"`
	StartAt              *time.Time            `json:"start_at"`
	EndAt                *time.Time            `json:"end_at"`
	MaxRuns              *int64                `json:"max_runs"`
	MisfirePolicy        models.MisfirePolicy  `json:"misfire_policy"`
	CatchupWindowSeconds *int64                `json:"catchup_window_seconds"`
	Concurrency          models.Concurrency    `json:"concurrency"`
	Params               json.RawMessage       `json:"params"`
	Status               models.ScheduleStatus `json:"status"`
	// Priority overrides the definition's; null keeps the definition's.
	Priority *int64 `json:"priority"`
}

func newScheduleRequest() *scheduleRequest {
	return &scheduleRequest{Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
		CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce}
}

func scheduleRequestOf(s *models.Schedule) *scheduleRequest {
	return &scheduleRequest{
		Name: s.Name, JobDefinitionID: s.JobDefinitionID, ScheduleType: s.ScheduleType, CronExpr: s.CronExpr,
		CronSyntax: s.CronSyntax, DSTPolicy: s.DSTPolicy, CalendarID: s.CalendarID, IntervalSeconds: int64p(s.IntervalSeconds), RunAt: s.RunAt, Timezone: s.Timezone, StartAt: s.StartAt, EndAt: s.EndAt,
		MaxRuns: int64p(s.MaxRuns), MisfirePolicy: s.MisfirePolicy, CatchupWindowSeconds: int64p(s.CatchupWindowSeconds),
		Concurrency: s.Concurrency, Params: json.RawMessage(s.Params), Status: s.Status, Priority: int64p(s.Priority),
	}
}

// runRequest asks for an ad hoc job.
type runRequest struct {
	JobDefinitionID int64           `json:"job_definition_id"`
	Params          json.RawMessage `json:"params"`
	RunAt           *time.Time      `json:"run_at"`
	// Priority overrides the definition's for this job.
	Priority *int64 `json:"priority"`
}

// triggerRequest is the optional body of a schedule's trigger.
type triggerRequest struct {
	// Priority overrides the schedule's (and definition's) for this job.
	Priority *int64 `json:"priority"`
}

// configurationRequest sets one configurations row.
type configurationRequest struct {
	Value       *string `json:"value"`
	Description *string `json:"description"`
}

func int64p(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func intp(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// checkText refuses a NUL in any text field of a decoded request, whatever
// the field: PostgreSQL cannot store one in text (SQLSTATE 22021, a 500)
// where SQLite and MySQL do, and no field has a use for it. v is what a
// body was decoded into (or a row as a request would carry it); the field
// named is its JSON key. JSON documents (params) are raw bytes, where a
// NUL stays the escape \u0000, which every database stores.
func checkText(v any) *apiError {
	if f, ok := nulField(reflect.ValueOf(v), ""); ok {
		return badRequest(f, "%s must not contain the NUL character (\\u0000)", f)
	}
	return nil
}

func nulField(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nulField(v.Elem(), path)
		}
	case reflect.String:
		return path, strings.IndexByte(v.String(), 0) >= 0
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			// encoding/json promotes the fields of an embedded struct
			// even when its type is unexported.
			promoted := f.Anonymous && f.Type.Kind() == reflect.Struct
			if (!f.IsExported() && !promoted) || name == "-" {
				continue
			}
			sub := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				sub = joinPath(path, name)
			}
			if p, ok := nulField(v.Field(i), sub); ok {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // json.RawMessage, []byte
		}
		for i := range v.Len() {
			if p, ok := nulField(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key())
			if strings.IndexByte(k, 0) >= 0 {
				return path, true
			}
			if p, ok := nulField(it.Value(), joinPath(path, k)); ok {
				return p, true
			}
		}
	}
	return "", false
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkQuery refuses a query parameter with a NUL or bytes that are not
// UTF-8, on every route: PostgreSQL refuses both in a text comparison
// (?name=), which would be a 500 there and a plain miss elsewhere.
func checkQuery(r *http.Request) *apiError {
	for name, vals := range r.URL.Query() {
		for _, s := range append([]string{name}, vals...) {
			switch {
			case strings.IndexByte(s, 0) >= 0:
				return badRequest(name, "query parameter %q must not contain the NUL character (%%00)", name)
			case !utf8.ValidString(s):
				return badRequest(name, "query parameter %q is not valid UTF-8", name)
			}
		}
	}
	return nil
}

// checkName applies the rules shared by definition and schedule names.
func checkName(name string) *apiError {
	switch {
	case strings.TrimSpace(name) == "":
		return badRequest("name", "name is required")
	case strings.TrimSpace(name) != name:
		return badRequest("name", "name must not start or end with white space")
	case utf8.RuneCountInString(name) > maxName:
		return badRequest("name", "name is longer than %d characters", maxName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return badRequest("name", "name must not contain control characters")
	case strings.Trim(name, "0123456789") == "":
		// The CLI reads an all-digit argument as an id.
		return badRequest("name", "name must not be all digits; the CLI would read it as an id")
	}
	return nil
}

// checkInt32 checks an INT column: MySQL's INT is 32 bits.
func checkInt32(field string, v, minimum int64) *apiError {
	if v < minimum || v > math.MaxInt32 {
		return badRequest(field, "%s must be from %d to %d, got %d", field, minimum, math.MaxInt32, v)
	}
	return nil
}

// checkPriority checks a priority against the range the schema's CHECK
// constraints allow.
func checkPriority(v int64) *apiError {
	if !models.ValidPriority(v) {
		return badRequest("priority", "priority must be from %d (lowest) to %d (highest; the default is %d), got %d",
			models.PriorityMin, models.PriorityMax, models.PriorityDefault, v)
	}
	return nil
}

// checkObject checks that a params document is a JSON object (or absent).
// Engines merge params key by key and tasks decode them into structs; any
// other JSON value fails every job.
func checkObject(field string, raw json.RawMessage) (models.JSON, *apiError) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, badRequest(field, "%s must be a JSON object", field)
	}
	// Compact, so the column holds one canonical spelling.
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, badRequest(field, "%s: %v", field, err)
	}
	return models.JSON(b.Bytes()), nil
}

// mergeParams is models.MergeParams for request handlers. Both sides were
// checked to be objects at the door (or come from the table, which only
// the door writes), so a failure here is the row's fault: a 400 naming it.
func mergeParams(defaults, params models.JSON) (models.JSON, *apiError) {
	m, err := models.MergeParams(defaults, params)
	if err != nil {
		return nil, badRequest("params", "%v", err)
	}
	return m, nil
}

// checkTaskParams runs the task's Validator, if it has one, on params.
// field is the request field blamed ("default_params" or "params").
func checkTaskParams(reg *tasks.Registry, kind, field string, params models.JSON) *apiError {
	t, err := reg.New(kind)
	if err != nil {
		if field == "default_params" {
			return badRequest("task_type", "%v", err)
		}
		// The definition names a task type this node does not register
		// (a plugin missing here, or a row written by SQL).
		return badRequest("job_definition_id", "the job definition's task_type %q is not registered on this node (registered: %s)",
			kind, strings.Join(reg.Kinds(), ", "))
	}
	v, ok := t.(tasks.Validator)
	if !ok {
		return nil
	}
	if err := v.Validate(json.RawMessage(params)); err != nil {
		var pe *tasks.ParamError
		if errors.As(err, &pe) && pe.Field != "" {
			field += "." + pe.Field
		}
		return badRequest(field, "%s: %v", field, err)
	}
	return nil
}

// validateDefinition turns a request into a row, or says what is wrong.
func validateDefinition(reg *tasks.Registry, req *definitionRequest) (*models.JobDefinition, *apiError) {
	if e := checkName(req.Name); e != nil {
		return nil, e
	}
	if strings.TrimSpace(req.TaskType) == "" {
		return nil, badRequest("task_type", "task_type is required (registered: %s)", strings.Join(reg.Kinds(), ", "))
	}
	if _, err := reg.New(req.TaskType); err != nil {
		return nil, badRequest("task_type", "unknown task_type %q: this node registers %s", req.TaskType, strings.Join(reg.Kinds(), ", "))
	}
	if utf8.RuneCountInString(req.Description) > maxDescription {
		return nil, badRequest("description", "description is longer than %d characters", maxDescription)
	}
	for _, c := range []struct {
		field      string
		v, minimum int64
	}{{"timeout_seconds", req.TimeoutSeconds, 0}, {"max_attempts", req.MaxAttempts, 1}, {"retry_backoff_seconds", req.RetryBackoffSeconds, 0}} {
		if e := checkInt32(c.field, c.v, c.minimum); e != nil {
			return nil, e
		}
	}
	switch req.NotifyOn {
	case models.NotifyNever, models.NotifyFailure, models.NotifySuccess, models.NotifyAlways:
	default:
		return nil, badRequest("notify_on", "unknown notify_on %q (want never, failure, success or always)", req.NotifyOn)
	}
	if e := checkPriority(req.Priority); e != nil {
		return nil, e
	}
	if utf8.RuneCountInString(req.NotifyEmails) > maxEmails {
		return nil, badRequest("notify_emails", "notify_emails is longer than %d characters", maxEmails)
	}
	var emails []string
	for _, e := range strings.Split(req.NotifyEmails, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if a, err := mail.ParseAddress(e); err != nil || a.Name != "" {
			return nil, badRequest("notify_emails", "notify_emails: %q is not an email address (want a comma-separated list like ops@example.com)", e)
		}
		emails = append(emails, e)
	}
	params, e := checkObject("default_params", req.DefaultParams)
	if e != nil {
		return nil, e
	}
	// A definition must be runnable on its own (an ad hoc run without
	// params uses exactly these), so its defaults must satisfy the task.
	if e := checkTaskParams(reg, req.TaskType, "default_params", params); e != nil {
		return nil, e
	}
	return &models.JobDefinition{
		Name: req.Name, TaskType: req.TaskType, Description: req.Description, DefaultParams: params,
		TimeoutSeconds: int(req.TimeoutSeconds), MaxAttempts: int(req.MaxAttempts), RetryBackoffSeconds: int(req.RetryBackoffSeconds),
		NotifyOn: req.NotifyOn, NotifyEmails: strings.Join(emails, ","), RequestsRecovery: req.RequestsRecovery,
		Priority: int(req.Priority),
	}, nil
}

// validateSchedule turns a request into a row, or says what is wrong. def
// is the definition req names (nil when it does not exist). Field checks
// come first so each error names its field; trigger.New then has the last
// word, with the very code the engine will run. cal is the calendar
// req.CalendarID names (loaded by the handler).
// createdAt is the row's creation time (now for a new row): an interval
// schedule without start_at counts its grid from it.
func validateSchedule(reg *tasks.Registry, req *scheduleRequest, def *models.JobDefinition, cal *models.Calendar, createdAt time.Time) (*models.Schedule, trigger.Trigger, *apiError) {
	if e := checkName(req.Name); e != nil {
		return nil, nil, e
	}
	if req.JobDefinitionID <= 0 {
		return nil, nil, badRequest("job_definition_id", "job_definition_id is required")
	}
	if def == nil || def.ID != req.JobDefinitionID {
		return nil, nil, badRequest("job_definition_id", "job definition %d does not exist", req.JobDefinitionID)
	}
	var spec string
	switch req.ScheduleType {
	case models.ScheduleCron:
		spec = "cron_expr"
		if req.CronExpr == nil || strings.TrimSpace(*req.CronExpr) == "" {
			return nil, nil, badRequest("cron_expr", `a cron schedule needs cron_expr (5 fields, 6 with seconds, or a descriptor such as "@daily" or "@every 5m")`)
		}
		if len(*req.CronExpr) > maxCronExpr {
			return nil, nil, badRequest("cron_expr", "cron_expr is longer than %d characters", maxCronExpr)
		}
	case models.ScheduleInterval:
		spec = "interval_seconds"
		if req.IntervalSeconds == nil {
			return nil, nil, badRequest("interval_seconds", "an interval schedule needs interval_seconds")
		}
		if e := checkInt32("interval_seconds", *req.IntervalSeconds, 1); e != nil {
			return nil, nil, e
		}
	case models.ScheduleOnce:
		spec = "run_at"
		if req.RunAt == nil {
			return nil, nil, badRequest("run_at", "a once schedule needs run_at")
		}
	case "":
		return nil, nil, badRequest("schedule_type", "schedule_type is required (cron, interval or once)")
	default:
		return nil, nil, badRequest("schedule_type", "unknown schedule_type %q (want cron, interval or once)", req.ScheduleType)
	}
	// A spec column of another type would be ignored by the engine and
	// mislead whoever reads the row; refuse it.
	for _, c := range []struct {
		field string
		set   bool
	}{{"cron_expr", req.CronExpr != nil}, {"interval_seconds", req.IntervalSeconds != nil}, {"run_at", req.RunAt != nil}} {
		if c.set && c.field != spec {
			return nil, nil, badRequest(c.field, "%s does not apply to a %s schedule (it uses %s); leave it out or null", c.field, req.ScheduleType, spec)
		}
	}
	if e := checkSyntax(req); e != nil {
		return nil, nil, e
	}
	if req.Timezone == "" {
		return nil, nil, badRequest("timezone", `timezone must not be empty; use "UTC" or an IANA name such as "Europe/Paris"`)
	}
	if len(req.Timezone) > maxTimezone {
		return nil, nil, badRequest("timezone", "timezone is longer than %d characters", maxTimezone)
	}
	if req.Timezone == "Local" {
		// Local differs from node to node, and all nodes must agree on fire times.
		return nil, nil, badRequest("timezone", `timezone "Local" is not allowed: nodes may differ; use an IANA name such as "Europe/Paris"`)
	}
	if _, err := time.LoadLocation(req.Timezone); err != nil {
		return nil, nil, badRequest("timezone", "unknown timezone %q: use an IANA name such as \"Europe/Paris\" or \"UTC\"", req.Timezone)
	}
	if req.StartAt != nil && req.EndAt != nil && req.EndAt.Before(*req.StartAt) {
		return nil, nil, badRequest("end_at", "end_at is before start_at")
	}
	if req.MaxRuns != nil {
		if e := checkInt32("max_runs", *req.MaxRuns, 1); e != nil {
			return nil, nil, e
		}
	}
	if req.CatchupWindowSeconds != nil {
		if e := checkInt32("catchup_window_seconds", *req.CatchupWindowSeconds, 0); e != nil {
			return nil, nil, e
		}
	}
	if req.Priority != nil {
		if e := checkPriority(*req.Priority); e != nil {
			return nil, nil, e
		}
	}
	switch req.MisfirePolicy {
	case models.MisfireFireOnce, models.MisfireSkip, models.MisfireFireAll:
	default:
		return nil, nil, badRequest("misfire_policy", "unknown misfire_policy %q (want fire_once, skip or fire_all)", req.MisfirePolicy)
	}
	switch req.Concurrency {
	case models.ConcurrencyAllow, models.ConcurrencyForbid:
	default:
		return nil, nil, badRequest("concurrency", "unknown concurrency %q (want allow or forbid)", req.Concurrency)
	}
	switch req.Status {
	case models.ScheduleActive, models.SchedulePaused:
	default:
		return nil, nil, badRequest("status", "status must be active or paused, got %q (completed and invalid are set by the engine)", req.Status)
	}
	for _, t := range []struct {
		field string
		v     *time.Time
	}{{"run_at", req.RunAt}, {"start_at", req.StartAt}, {"end_at", req.EndAt}} {
		if t.v != nil && (t.v.Year() < 1970 || t.v.Year() > 9999) {
			return nil, nil, badRequest(t.field, "%s must be between the years 1970 and 9999", t.field)
		}
	}
	params, e := checkObject("params", req.Params)
	if e != nil {
		return nil, nil, e
	}
	merged, e := mergeParams(def.DefaultParams, params)
	if e != nil {
		return nil, nil, e
	}
	if e := checkTaskParams(reg, def.TaskType, "params", merged); e != nil {
		return nil, nil, e
	}
	s := &models.Schedule{
		Name: req.Name, JobDefinitionID: req.JobDefinitionID, ScheduleType: req.ScheduleType,
		CronExpr: req.CronExpr, CronSyntax: req.CronSyntax, DSTPolicy: req.DSTPolicy, CalendarID: req.CalendarID, IntervalSeconds: intp(req.IntervalSeconds), RunAt: utcp(req.RunAt), Timezone: req.Timezone,
		StartAt: utcp(req.StartAt), EndAt: utcp(req.EndAt), MaxRuns: intp(req.MaxRuns), MisfirePolicy: req.MisfirePolicy,
		CatchupWindowSeconds: intp(req.CatchupWindowSeconds), Concurrency: req.Concurrency, Params: params, Status: req.Status,
		Priority: intp(req.Priority), CreatedAt: createdAt.UTC().Truncate(time.Microsecond),
	}
	if s.CronExpr != nil {
		expr := strings.TrimSpace(*s.CronExpr)
		s.CronExpr = &expr
	}
	trig, err := trigger.New(s, cal)
	if err != nil {
		field := spec
		if cal != nil && strings.HasPrefix(err.Error(), "calendar ") {
			field = "calendar_id"
		}
		return nil, nil, badRequest(field, "%s: %v", field, err)
	}
	return s, trig, nil
}

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

// checkSyntax checks cron_syntax and dst_policy: quartz is for cron
// schedules, and brings Quartz's own daylight-saving rules, so dst_policy
// (for the standard syntax) must stay at its default there.
func checkSyntax(req *scheduleRequest) *apiError {
	switch req.CronSyntax {
	case models.SyntaxStandard:
	case models.SyntaxQuartz:
		if req.ScheduleType != models.ScheduleCron {
			return badRequest("cron_syntax", "cron_syntax quartz applies to cron schedules only; use standard for a %s schedule", req.ScheduleType)
		}
	default:
		return badRequest("cron_syntax", "unknown cron_syntax %q (want standard or quartz)", req.CronSyntax)
	}
	switch req.DSTPolicy {
	case models.DSTOnce:
	case models.DSTSkip, models.DSTBoth, models.DSTWall:
		if req.ScheduleType != models.ScheduleCron || req.CronSyntax != models.SyntaxStandard {
			return badRequest("dst_policy", "dst_policy %s applies to cron schedules in the standard syntax only (Quartz syntax follows Quartz's own rules; intervals and once schedules are instants); leave it once", req.DSTPolicy)
		}
	default:
		return badRequest("dst_policy", "unknown dst_policy %q (want once, skip, both or wall)", req.DSTPolicy)
	}
	return nil
}

// nextFires lists up to n fire times of trig after now, in UTC.
func nextFires(trig trigger.Trigger, now time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	t := now
	for len(out) < n {
		next := trig.Next(t)
		if next.IsZero() || !next.After(t) {
			break
		}
		out = append(out, next.UTC())
		t = next
	}
	return out
}
