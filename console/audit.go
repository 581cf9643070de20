package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"

	"github.com/chimesched/chime/api"
)

// The audit page (admins): the log of changes, newest first, filtered by
// object and actor, each row with the fields it changed. It reads through
// the API, so a non-admin session gets the API's refusal and the secrets
// arrive masked.

type auditChange struct {
	Field, Before, After string
}

type auditRow struct {
	api.AuditEntryView
	Changes []auditChange
}

type auditData struct {
	Rows                        []auditRow
	ObjectType, ObjectID, Actor string
	Next                        string // the query of the next page, empty on the last
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	in := r.URL.Query()
	d := &auditData{ObjectType: in.Get("object_type"), ObjectID: in.Get("object_id"), Actor: in.Get("actor")}
	q := url.Values{"limit": {"50"}}
	for k, v := range map[string]string{"object_type": d.ObjectType, "object_id": d.ObjectID, "actor": d.Actor, "cursor": in.Get("cursor")} {
		if v != "" {
			q.Set(k, v)
		}
	}
	res := c.callAPI(r.Context(), http.MethodGet, api.Prefix+"/audit?"+q.Encode(), nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	var list api.List[api.AuditEntryView]
	if err := res.decode(&list); err != nil {
		c.fail(w, r, s, http.StatusInternalServerError, err.Error())
		return
	}
	for _, e := range list.Items {
		d.Rows = append(d.Rows, auditRow{AuditEntryView: e, Changes: auditChanges(e.Before, e.After)})
	}
	if list.NextCursor != "" {
		q.Set("cursor", list.NextCursor)
		q.Del("limit")
		d.Next = q.Encode()
	}
	c.render(w, http.StatusOK, "audit", &page{Title: "Audit log", Nav: "audit", Session: s, Data: d})
}

// auditChanges lists the fields whose value differs between before and
// after (every field of an insert or a delete), by name.
func auditChanges(before, after json.RawMessage) []auditChange {
	var b, a map[string]json.RawMessage
	_ = json.Unmarshal(before, &b)
	_ = json.Unmarshal(after, &a)
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	var out []auditChange
	for k := range keys {
		if k == "updated_at" || bytes.Equal(b[k], a[k]) {
			continue
		}
		out = append(out, auditChange{Field: k, Before: shown(b[k]), After: shown(a[k])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// shown is a JSON value as the page prints it: strings unquoted.
func shown(v json.RawMessage) string {
	if v == nil {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
