package api

import (
	"errors"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// Writers other than the HTTP handlers (chime import quartz) check rows with
// these, so that what they write passes exactly the checks a POST would
// (checkText included, which a POST gets from decodeJSON):
// one set of rules for every door into the tables. Each takes a row as a
// create request would carry it and returns the row the API would store.

// ValidationError is a row the API would refuse: Field names the column at
// fault, as in the API's 400 answers.
type ValidationError struct {
	Field, Message string
}

func (e *ValidationError) Error() string { return e.Message }

func rowError(e *apiError) error {
	return &ValidationError{Field: e.Field, Message: e.Error.Error}
}

// ValidateDefinition checks d as POST /job_definitions checks its body,
// against the task types of reg.
func ValidateDefinition(reg *tasks.Registry, d *models.JobDefinition) (*models.JobDefinition, error) {
	if reg == nil {
		return nil, errors.New("api: ValidateDefinition needs a registry")
	}
	req := definitionRequestOf(d)
	e := checkText(req)
	var row *models.JobDefinition
	if e == nil {
		row, e = validateDefinition(reg, req)
	}
	if e != nil {
		return nil, rowError(e)
	}
	return row, nil
}

// ValidateSchedule checks s as POST /schedules checks its body: def is the
// definition s.JobDefinitionID names (nil: it does not exist), cal the
// calendar s.CalendarID names (nil when none), createdAt the row's creation
// time (an interval without start_at counts its grid from it). It returns
// the row with the API's normalisation (times in UTC to the microsecond,
// params compacted).
func ValidateSchedule(reg *tasks.Registry, s *models.Schedule, def *models.JobDefinition, cal *models.Calendar, createdAt time.Time) (*models.Schedule, error) {
	if reg == nil {
		return nil, errors.New("api: ValidateSchedule needs a registry")
	}
	req := scheduleRequestOf(s)
	e := checkText(req)
	var row *models.Schedule
	if e == nil {
		row, _, e = validateSchedule(reg, req, def, cal, createdAt)
	}
	if e != nil {
		return nil, rowError(e)
	}
	return row, nil
}

// ValidateCalendar checks c as POST /calendars checks its body.
func ValidateCalendar(c *models.Calendar) (*models.Calendar, error) {
	req := calendarRequestOf(c)
	e := checkText(req)
	var row *models.Calendar
	if e == nil {
		row, e = validateCalendar(req)
	}
	if e != nil {
		return nil, rowError(e)
	}
	return row, nil
}
