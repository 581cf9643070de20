package api

import (
	"net/http"

	"github.com/chimesched/chime/models"
)

var notificationStatuses = []string{
	string(models.NotificationPending), string(models.NotificationSent), string(models.NotificationFailed),
}

// listNotifications lists the outbox, newest first: what was sent, what
// waits for a retry and why, what was given up.
func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) *apiError {
	p, e := listQuery(r, []string{"job_id", "status"}, notificationStatuses)
	if e != nil {
		return e
	}
	var jobID int64
	if v := r.URL.Query().Get("job_id"); v != "" {
		id, ok := parseID(v)
		if !ok {
			return badRequest("job_id", "job_id must be a positive integer, got %q", v)
		}
		jobID = id
	}
	items, err := s.st.Admin().ListNotifications(r.Context(), p, jobID)
	if err != nil {
		return s.fromStore(r, err, "a notification")
	}
	s.writeJSON(w, r, http.StatusOK, viewPage(r, pageOf(items, p, func(n *models.Notification) int64 { return n.ID }), s.notificationView))
	return nil
}
