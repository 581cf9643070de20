package validate

import (
	"encoding/json"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// MaxCalendarDefinition bounds a calendar's definition document.
const MaxCalendarDefinition = 256 << 10

// CalendarRequest is the writable part of a calendars row, as the API's
// JSON carries it.
type CalendarRequest struct {
	Name        string              `json:"name"`
	Kind        models.CalendarKind `json:"kind"`
	Definition  json.RawMessage     `json:"definition"`
	Timezone    string              `json:"timezone"`
	Description string              `json:"description"`
}

// NewCalendarRequest holds the defaults a create starts from.
func NewCalendarRequest() *CalendarRequest { return &CalendarRequest{Timezone: "UTC"} }

// CalendarRequestOf is c as a request: what an update starts from.
func CalendarRequestOf(c *models.Calendar) *CalendarRequest {
	return &CalendarRequest{Name: c.Name, Kind: c.Kind, Definition: json.RawMessage(c.Definition), Timezone: c.Timezone, Description: c.Description}
}

// Calendar checks c as a create request carrying it is checked (Text
// included) and returns the row to store.
func Calendar(c *models.Calendar) (*models.Calendar, error) {
	req := CalendarRequestOf(c)
	if err := Text(req); err != nil {
		return nil, err
	}
	return req.Validate()
}

// Validate turns the request into a row with trigger.ParseCalendar having
// the last word, the very code the engine runs. It does not run Text: the
// API's decoder does.
func (req *CalendarRequest) Validate() (*models.Calendar, error) {
	c, e := req.validate()
	return c, asError(e)
}

func (req *CalendarRequest) validate() (*models.Calendar, *Error) {
	if e := checkName(req.Name); e != nil {
		return nil, e
	}
	if len(req.Description) > MaxDescription {
		return nil, errorf("description", "description is longer than %d characters", MaxDescription)
	}
	if len(req.Definition) > MaxCalendarDefinition {
		return nil, errorf("definition", "definition is longer than %d bytes", MaxCalendarDefinition)
	}
	if _, e := checkTimezone(req.Timezone); e != nil {
		return nil, e
	}
	def, e := checkObject("definition", req.Definition)
	if e != nil {
		return nil, e
	}
	c := &models.Calendar{Name: req.Name, Kind: req.Kind, Definition: def, Timezone: req.Timezone, Description: req.Description}
	if _, err := trigger.ParseCalendar(c); err != nil {
		field := "definition"
		if _, ok := map[models.CalendarKind]bool{models.CalendarHoliday: true, models.CalendarAnnual: true, models.CalendarMonthly: true,
			models.CalendarWeekly: true, models.CalendarDaily: true, models.CalendarCron: true}[req.Kind]; !ok {
			field = "kind"
		}
		return nil, errorf(field, "%v", err)
	}
	return c, nil
}
