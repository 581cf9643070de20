package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/models"
)

// Validity is part of every row the API shows that has a JSON column
// (params, default_params, definition), and of notices. The API refuses a
// value that is not a JSON object there, but plain SQL can write anything
// SQLite, MySQL or PostgreSQL lets in; such a column cannot be encoded,
// and one of them used to empty the whole list it was in. The row is
// shown instead, with that column null and these two fields set. So is a
// jobs or notifications row with a value its field cannot hold (zero), or
// a counter or time out of its bound (the time zero), which the engines
// fail instead of running (see models.Job.Unreadable).
type Validity struct {
	// Invalid is true when a column of the row is not valid JSON; absent
	// otherwise.
	Invalid bool `json:"invalid,omitempty"`
	// InvalidReason names the column and says what is wrong with it.
	InvalidReason string `json:"invalid_reason,omitempty"`
}

// JobView is a jobs row as the API shows it.
type JobView struct {
	models.Job
	Validity
}

// DefinitionView is a job_definitions row as the API shows it.
type DefinitionView struct {
	models.JobDefinition
	Validity
}

// CalendarView is a calendars row as the API shows it.
type CalendarView struct {
	models.Calendar
	Validity
}

// NotificationView is a notifications row as the API shows it.
type NotificationView struct {
	models.Notification
	Validity
}

func (s *Server) jobView(r *http.Request, j *models.Job) JobView {
	v := JobView{Job: *j}
	v.Validity = s.shown(r, "jobs", j.ID, "params", &v.Params)
	v.Validity = s.invalid(r, "jobs", j.ID, j.Unreadable, v.Validity)
	return v
}

func (s *Server) notificationView(r *http.Request, n *models.Notification) NotificationView {
	return NotificationView{Notification: *n, Validity: s.invalid(r, "notifications", n.ID, n.Unreadable, Validity{})}
}

// invalid adds reason, why a row is shown as invalid, to v, and logs it
// once; an empty reason leaves v as it is.
func (s *Server) invalid(r *http.Request, table string, id int64, reason string, v Validity) Validity {
	if reason == "" {
		return v
	}
	if s.badRows.first(fmt.Sprintf("%s/%d/%s", table, id, reason)) {
		s.log.WithFields(logrus.Fields{"table": table, "id": id, "path": r.URL.Path}).
			Warnf("api: a row written without the API is shown as invalid: %s", reason)
	}
	if v.Invalid {
		reason += "; " + v.InvalidReason
	}
	return Validity{Invalid: true, InvalidReason: reason}
}

func (s *Server) definitionView(r *http.Request, d *models.JobDefinition) DefinitionView {
	v := DefinitionView{JobDefinition: *d}
	v.Validity = s.shown(r, "job_definitions", d.ID, "default_params", &v.DefaultParams)
	return v
}

func (s *Server) calendarView(r *http.Request, c *models.Calendar) CalendarView {
	v := CalendarView{Calendar: *c}
	v.Validity = s.shown(r, "calendars", c.ID, "definition", &v.Definition)
	return v
}

// viewPage turns a page of rows into a page of their views.
func viewPage[T, V any](r *http.Request, page List[T], view func(*http.Request, *T) V) List[V] {
	out := List[V]{Items: make([]V, len(page.Items)), NextCursor: page.NextCursor}
	for i := range page.Items {
		out.Items[i] = view(r, &page.Items[i])
	}
	return out
}

// shown checks column of row id before it is encoded. A column that is
// not JSON is set to nil (shown as null) and reported in the Validity,
// and logged once.
func (s *Server) shown(r *http.Request, table string, id int64, column string, j *models.JSON) Validity {
	reason := notJSON(column, *j)
	if reason == "" {
		return Validity{}
	}
	*j = nil
	return s.invalid(r, table, id, reason, Validity{})
}

// notJSON says what is wrong with a JSON column's content, or "" when it
// is NULL, empty or valid JSON. Not UTF-8 counts as invalid: the answer
// would carry the bytes as they are, and clients that decode it as UTF-8
// (most) would fail on the whole answer.
func notJSON(column string, j models.JSON) string {
	if len(j) == 0 || (json.Valid(j) && utf8.Valid(j)) {
		return ""
	}
	var why string
	var raw json.RawMessage
	var se *json.SyntaxError
	switch err := json.Unmarshal(j, &raw); {
	case err == nil:
		why = "not UTF-8"
	case errors.As(err, &se):
		why = fmt.Sprintf("%v at byte %d", err, se.Offset)
	default:
		why = err.Error()
	}
	return fmt.Sprintf("%s is not valid JSON in the database (%s; the column holds %d bytes beginning %s), so it is shown as null",
		column, why, len(j), quoteStart(j))
}

// quoteStart quotes the first bytes of b, for a message.
func quoteStart(b []byte) string {
	const n = 32
	if len(b) <= n {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q…", b[:n])
}

// onceSet remembers what was logged, so a list an admin polls does not
// log the same bad row at every poll. It forgets everything past a bound:
// the worst case is a line logged again.
type onceSet struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

const onceSetMax = 1024

func (o *onceSet) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[key]; ok {
		return false
	}
	if o.seen == nil || len(o.seen) >= onceSetMax {
		o.seen = map[string]struct{}{}
	}
	o.seen[key] = struct{}{}
	return true
}
