package api

import (
	"errors"
	"net/http"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/validate"
)

// listCalendars lists every calendar (they are few), or the one named by
// ?name=.
func (s *Server) listCalendars(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	for k := range q {
		if k != "name" {
			return badRequest(k, "unknown query parameter %q (accepted: name)", k)
		}
	}
	admin := s.st.Admin()
	var items []models.Calendar
	if q.Has("name") {
		c, err := admin.GetCalendarByName(r.Context(), q.Get("name"))
		if err != nil && !errors.Is(err, chimedb.ErrNotFound) {
			return s.fromStore(r, err, "a calendar")
		}
		if c != nil {
			items = append(items, *c)
		}
	} else {
		var err error
		if items, err = admin.ListCalendars(r.Context()); err != nil {
			return s.fromStore(r, err, "a calendar")
		}
	}
	if items == nil {
		items = []models.Calendar{}
	}
	s.writeJSON(w, r, http.StatusOK, viewPage(r, List[models.Calendar]{Items: items}, s.calendarView))
	return nil
}

func (s *Server) getCalendar(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "calendar")
	if e != nil {
		return e
	}
	c, err := s.st.Admin().GetCalendar(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a calendar")
	}
	s.writeJSON(w, r, http.StatusOK, s.calendarView(r, c))
	return nil
}

func (s *Server) createCalendar(w http.ResponseWriter, r *http.Request) *apiError {
	req := validate.NewCalendarRequest()
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	c, e := validateCalendar(req)
	if e != nil {
		return e
	}
	if err := s.st.Admin().CreateCalendar(r.Context(), c); err != nil {
		return s.fromStore(r, err, "a calendar")
	}
	w.Header().Set("Location", Prefix+"/calendars/"+itoa(c.ID))
	s.writeJSON(w, r, http.StatusCreated, s.calendarView(r, c))
	return nil
}

// updateCalendar applies the body's fields over the stored row. The
// schedules naming it follow the new exclusions from the engine's next
// sync, counting afresh from then (a change of what a calendar excludes is
// a timing edit for them).
func (s *Server) updateCalendar(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "calendar")
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	cur, err := admin.GetCalendar(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a calendar")
	}
	req := validate.CalendarRequestOf(cur)
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	c, e := validateCalendar(req)
	if e != nil {
		return e
	}
	c.ID, c.CreatedAt = id, cur.CreatedAt
	if err := admin.UpdateCalendar(r.Context(), c); err != nil {
		return s.fromStore(r, err, "a calendar")
	}
	s.schedulesChanged(0)
	s.writeJSON(w, r, http.StatusOK, s.calendarView(r, c))
	return nil
}

func (s *Server) deleteCalendar(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "calendar")
	if e != nil {
		return e
	}
	if err := s.st.Admin().DeleteCalendar(r.Context(), id); err != nil {
		return s.fromStore(r, err, "a calendar")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// calendarFor loads the calendar a schedule request names, by calendar (a
// name) or calendar_id, and sets req.CalendarID to it.
func (s *Server) calendarFor(r *http.Request, req *validate.ScheduleRequest) (*models.Calendar, *apiError) {
	admin := s.st.Admin()
	if req.Calendar != nil {
		if *req.Calendar == "" {
			req.CalendarID = nil
			return nil, nil
		}
		c, err := admin.GetCalendarByName(r.Context(), *req.Calendar)
		if errors.Is(err, chimedb.ErrNotFound) {
			return nil, badRequest("calendar", "calendar %q does not exist", *req.Calendar)
		}
		if err != nil {
			return nil, s.fromStore(r, err, "a calendar")
		}
		req.CalendarID = &c.ID
		return c, nil
	}
	if req.CalendarID == nil {
		return nil, nil
	}
	c, err := admin.GetCalendar(r.Context(), *req.CalendarID)
	if errors.Is(err, chimedb.ErrNotFound) {
		return nil, badRequest("calendar_id", "calendar %d does not exist", *req.CalendarID)
	}
	if err != nil {
		return nil, s.fromStore(r, err, "a calendar")
	}
	return c, nil
}
