package validate

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/trigger"
)

// ScheduleRequest is the writable part of a schedules row, as the API's
// JSON carries it. Numbers are int64 so that a value beyond the column's
// INT is refused, not wrapped; a spec field of another type is told apart
// from an absent one by its pointer.
type ScheduleRequest struct {
	Name            string `json:"name"`
	JobDefinitionID int64  `json:"job_definition_id"`
	// WorkflowID makes the schedule start runs of a workflow instead of
	// jobs of a definition: exactly one of the two is set. The door
	// checks that it exists (Workflow names it instead; the door resolves
	// the name into WorkflowID before Validate).
	WorkflowID   *int64              `json:"workflow_id"`
	Workflow     *string             `json:"workflow"`
	ScheduleType models.ScheduleType `json:"schedule_type"`
	CronExpr     *string             `json:"cron_expr"`
	CronSyntax   models.CronSyntax   `json:"cron_syntax"`
	DSTPolicy    models.DSTPolicy    `json:"dst_policy"`
	CalendarID   *int64              `json:"calendar_id"`
	// Calendar names the calendar instead of calendar_id; "" clears it.
	// The door resolves it into CalendarID before Validate.
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

// NewScheduleRequest holds the column defaults a create starts from.
func NewScheduleRequest() *ScheduleRequest {
	return &ScheduleRequest{Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
		CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce}
}

// ScheduleRequestOf is s as a request: what an update starts from.
func ScheduleRequestOf(s *models.Schedule) *ScheduleRequest {
	return &ScheduleRequest{
		Name: s.Name, JobDefinitionID: s.JobDefinitionID, WorkflowID: s.WorkflowID, ScheduleType: s.ScheduleType, CronExpr: s.CronExpr,
		CronSyntax: s.CronSyntax, DSTPolicy: s.DSTPolicy, CalendarID: s.CalendarID, IntervalSeconds: int64p(s.IntervalSeconds), RunAt: s.RunAt, Timezone: s.Timezone, StartAt: s.StartAt, EndAt: s.EndAt,
		MaxRuns: int64p(s.MaxRuns), MisfirePolicy: s.MisfirePolicy, CatchupWindowSeconds: int64p(s.CatchupWindowSeconds),
		Concurrency: s.Concurrency, Params: json.RawMessage(s.Params), Status: s.Status, Priority: int64p(s.Priority),
	}
}

// Schedule checks s as a create request carrying it is checked (Text
// included): def is the definition s.JobDefinitionID names (nil: it does
// not exist), cal the calendar s.CalendarID names (nil when none),
// createdAt the row's creation time (an interval without start_at counts
// its grid from it). It returns the row with the doors' normalisation
// (times in UTC to the microsecond, params compacted) and its trigger.
func Schedule(reg *tasks.Registry, s *models.Schedule, def *models.JobDefinition, cal *models.Calendar, createdAt time.Time) (*models.Schedule, trigger.Trigger, error) {
	if reg == nil {
		return nil, nil, errors.New("validate: Schedule needs a registry")
	}
	req := ScheduleRequestOf(s)
	if err := Text(req); err != nil {
		return nil, nil, err
	}
	return req.Validate(reg, def, cal, createdAt)
}

// Validate turns the request into a row and its trigger, or says what is
// wrong. def is the definition req names (nil when it does not exist),
// cal the calendar req.CalendarID names (loaded by the door), createdAt
// the row's creation time (now for a new row): an interval schedule
// without start_at counts its grid from it. Field checks come first so
// each error names its field; trigger.New then has the last word, with
// the very code the engine will run. It does not run Text: the API's
// decoder does.
func (req *ScheduleRequest) Validate(reg *tasks.Registry, def *models.JobDefinition, cal *models.Calendar, createdAt time.Time) (*models.Schedule, trigger.Trigger, error) {
	s, t, e := req.validate(reg, def, cal, createdAt)
	return s, t, asError(e)
}

func (req *ScheduleRequest) validate(reg *tasks.Registry, def *models.JobDefinition, cal *models.Calendar, createdAt time.Time) (*models.Schedule, trigger.Trigger, *Error) {
	if e := checkName(req.Name); e != nil {
		return nil, nil, e
	}
	if e := req.checkTarget(def); e != nil {
		return nil, nil, e
	}
	var spec string
	switch req.ScheduleType {
	case models.ScheduleCron:
		spec = "cron_expr"
		if req.CronExpr == nil || strings.TrimSpace(*req.CronExpr) == "" {
			return nil, nil, errorf("cron_expr", `a cron schedule needs cron_expr (5 fields, 6 with seconds, or a descriptor such as "@daily" or "@every 5m")`)
		}
		if len(*req.CronExpr) > MaxCronExpr {
			return nil, nil, errorf("cron_expr", "cron_expr is longer than %d characters", MaxCronExpr)
		}
	case models.ScheduleInterval:
		spec = "interval_seconds"
		if req.IntervalSeconds == nil {
			return nil, nil, errorf("interval_seconds", "an interval schedule needs interval_seconds")
		}
		if e := checkInt32("interval_seconds", *req.IntervalSeconds, 1); e != nil {
			return nil, nil, e
		}
	case models.ScheduleOnce:
		spec = "run_at"
		if req.RunAt == nil {
			return nil, nil, errorf("run_at", "a once schedule needs run_at")
		}
	case "":
		return nil, nil, errorf("schedule_type", "schedule_type is required (cron, interval or once)")
	default:
		return nil, nil, errorf("schedule_type", "unknown schedule_type %q (want cron, interval or once)", req.ScheduleType)
	}
	// A spec column of another type would be ignored by the engine and
	// mislead whoever reads the row; refuse it.
	for _, c := range []struct {
		field string
		set   bool
	}{{"cron_expr", req.CronExpr != nil}, {"interval_seconds", req.IntervalSeconds != nil}, {"run_at", req.RunAt != nil}} {
		if c.set && c.field != spec {
			return nil, nil, errorf(c.field, "%s does not apply to a %s schedule (it uses %s); leave it out or null", c.field, req.ScheduleType, spec)
		}
	}
	if e := req.checkSyntax(); e != nil {
		return nil, nil, e
	}
	if _, e := checkTimezone(req.Timezone); e != nil {
		return nil, nil, e
	}
	if req.StartAt != nil && req.EndAt != nil && req.EndAt.Before(*req.StartAt) {
		return nil, nil, errorf("end_at", "end_at is before start_at")
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
		return nil, nil, errorf("misfire_policy", "unknown misfire_policy %q (want fire_once, skip or fire_all)", req.MisfirePolicy)
	}
	switch req.Concurrency {
	case models.ConcurrencyAllow, models.ConcurrencyForbid:
	default:
		return nil, nil, errorf("concurrency", "unknown concurrency %q (want allow or forbid)", req.Concurrency)
	}
	switch req.Status {
	case models.ScheduleActive, models.SchedulePaused:
	default:
		return nil, nil, errorf("status", "status must be active or paused, got %q (completed and invalid are set by the engine)", req.Status)
	}
	for _, t := range []struct {
		field string
		v     *time.Time
	}{{"run_at", req.RunAt}, {"start_at", req.StartAt}, {"end_at", req.EndAt}} {
		if t.v != nil && (t.v.Year() < 1970 || t.v.Year() > 9999) {
			return nil, nil, errorf(t.field, "%s must be between the years 1970 and 9999", t.field)
		}
	}
	params, e := checkObject("params", req.Params)
	if e != nil {
		return nil, nil, e
	}
	if req.WorkflowID == nil {
		// A run's params go to every step, each of its own definition:
		// each step's job is checked when it is written.
		merged, e := mergeParams(def.DefaultParams, params)
		if e != nil {
			return nil, nil, e
		}
		if e := checkTaskParams(reg, def.TaskType, "params", merged); e != nil {
			return nil, nil, e
		}
	}
	s := &models.Schedule{
		Name: req.Name, JobDefinitionID: req.JobDefinitionID, WorkflowID: req.WorkflowID, ScheduleType: req.ScheduleType,
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
		return nil, nil, errorf(field, "%s: %v", field, err)
	}
	return s, trig, nil
}

// checkTarget checks that the request names exactly one of a definition
// (def, which must be it) and a workflow.
func (req *ScheduleRequest) checkTarget(def *models.JobDefinition) *Error {
	if req.WorkflowID != nil {
		if req.JobDefinitionID != 0 {
			return errorf("workflow_id", "a schedule names a job definition or a workflow, not both: leave job_definition_id out, or workflow_id")
		}
		if *req.WorkflowID <= 0 {
			return errorf("workflow_id", "workflow_id must be a workflow's id")
		}
		return nil
	}
	if req.JobDefinitionID <= 0 {
		return errorf("job_definition_id", "job_definition_id (or workflow_id) is required")
	}
	if def == nil || def.ID != req.JobDefinitionID {
		return errorf("job_definition_id", "job definition %d does not exist", req.JobDefinitionID)
	}
	return nil
}

// checkSyntax checks cron_syntax and dst_policy: quartz is for cron
// schedules, and brings Quartz's own daylight-saving rules, so dst_policy
// (for the standard syntax) must stay at its default there.
func (req *ScheduleRequest) checkSyntax() *Error {
	switch req.CronSyntax {
	case models.SyntaxStandard:
	case models.SyntaxQuartz:
		if req.ScheduleType != models.ScheduleCron {
			return errorf("cron_syntax", "cron_syntax quartz applies to cron schedules only; use standard for a %s schedule", req.ScheduleType)
		}
	default:
		return errorf("cron_syntax", "unknown cron_syntax %q (want standard or quartz)", req.CronSyntax)
	}
	switch req.DSTPolicy {
	case models.DSTOnce:
	case models.DSTSkip, models.DSTBoth, models.DSTWall:
		if req.ScheduleType != models.ScheduleCron || req.CronSyntax != models.SyntaxStandard {
			return errorf("dst_policy", "dst_policy %s applies to cron schedules in the standard syntax only (Quartz syntax follows Quartz's own rules; intervals and once schedules are instants); leave it once", req.DSTPolicy)
		}
	default:
		return errorf("dst_policy", "unknown dst_policy %q (want once, skip, both or wall)", req.DSTPolicy)
	}
	return nil
}
