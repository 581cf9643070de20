package api

import (
	"encoding/json"
	"net/http"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// The audit log (docs/security.md): one row per change of an admin
// object, written by the database's triggers whatever the door. Only
// admins read it: its rows name every object and every principal.

// AuditEntryView is an audit row as the API shows it: before and after as
// JSON (null for the side an insert or a delete lacks), masked again here
// in case a trigger was edited to keep more.
type AuditEntryView struct {
	models.AuditEntry
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

func auditView(e *models.AuditEntry) AuditEntryView {
	side := func(s *string) json.RawMessage {
		if s == nil {
			return json.RawMessage("null")
		}
		b := models.MaskAuditRow(e.ObjectType, []byte(*s))
		if !json.Valid(b) {
			// A trigger keeps JSON; text that is not is shown as a string.
			b, _ = json.Marshal(string(b))
		}
		return b
	}
	return AuditEntryView{AuditEntry: *e, Before: side(e.Before), After: side(e.After)}
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) *apiError {
	st, ok := s.st.(chimedb.AuditStore)
	if !ok {
		return &apiError{status: http.StatusNotImplemented, Error: Error{Error: "the audit log is not available on this node"}}
	}
	q := r.URL.Query()
	p := &chimedb.AuditListParams{ObjectType: q.Get("object_type"), ObjectID: q.Get("object_id"), Actor: q.Get("actor")}
	// listQuery checks limit, cursor, since, until and refuses unknown
	// parameters; the string filters are checked here.
	lq, e := listQuery(r, []string{"object_type", "object_id", "actor", "since", "until"}, nil)
	if e != nil {
		return e
	}
	for _, f := range []struct{ name, v string }{{"object_type", p.ObjectType}, {"object_id", p.ObjectID}, {"actor", p.Actor}} {
		if len(f.v) > 191 {
			return badRequest(f.name, "%s is longer than 191 bytes", f.name)
		}
		if len(q[f.name]) > 1 {
			return badRequest(f.name, "query parameter %q given %d times; give it once", f.name, len(q[f.name]))
		}
	}
	p.BeforeID, p.Limit, p.Since, p.Until = lq.BeforeID, lq.Limit, lq.Since, lq.Until
	items, err := st.ListAudit(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "the audit log")
	}
	views := make([]AuditEntryView, len(items))
	for i := range items {
		views[i] = auditView(&items[i])
	}
	s.writeJSON(w, r, http.StatusOK, pageOf(views, lq, func(v *AuditEntryView) int64 { return v.ID }))
	return nil
}
