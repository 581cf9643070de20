package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/trigger"
	"github.com/chimesched/chime/validate"
)

// The rules a body must meet live in package validate, shared with the
// other writers (chime import quartz); these give its refusals the API's
// shape, a 400 naming the field.

// invalid is err, a refusal of package validate, as a 400.
func invalid(err error) *apiError {
	if err == nil {
		return nil
	}
	if ve, ok := errors.AsType[*validate.Error](err); ok {
		return badRequest(ve.Field, "%s", ve.Message)
	}
	return badRequest("", "%v", err)
}

func checkText(v any) *apiError { return invalid(validate.Text(v)) }

func checkPriority(v int64) *apiError { return invalid(validate.Priority(v)) }

func checkObject(field string, raw json.RawMessage) (models.JSON, *apiError) {
	v, err := validate.Object(field, raw)
	return v, invalid(err)
}

func mergeParams(defaults, params models.JSON) (models.JSON, *apiError) {
	v, err := validate.MergeParams(defaults, params)
	return v, invalid(err)
}

func checkTaskParams(reg *tasks.Registry, kind, field string, params models.JSON) *apiError {
	return invalid(validate.TaskParams(reg, kind, field, params))
}

func validateDefinition(reg *tasks.Registry, req *validate.DefinitionRequest) (*models.JobDefinition, *apiError) {
	d, err := req.Validate(reg)
	return d, invalid(err)
}

func validateSchedule(reg *tasks.Registry, req *validate.ScheduleRequest, def *models.JobDefinition, cal *models.Calendar,
	createdAt time.Time) (*models.Schedule, trigger.Trigger, *apiError) {
	s, t, err := req.Validate(reg, def, cal, createdAt)
	return s, t, invalid(err)
}

func validateCalendar(req *validate.CalendarRequest) (*models.Calendar, *apiError) {
	c, err := req.Validate()
	return c, invalid(err)
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
