package api

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/chimedb"
)

// Page limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// List is the body of every list answer. NextCursor is empty on the last
// page; otherwise pass it back as ?cursor= for the next one.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// EncodeCursor and DecodeCursor give the cursor its opaque form: clients
// must not build cursors, so the format may change.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	return id, err == nil && id > 0
}

// listQuery parses the query parameters of a list. allowed names the
// filters this list takes beyond limit and cursor; any other parameter is
// refused, so a typo (?staus=failed) is an error rather than an unfiltered
// list. statuses, when not nil, are the values status may take.
func listQuery(r *http.Request, allowed []string, statuses []string) (*chimedb.AdminListParams, *apiError) {
	p := &chimedb.AdminListParams{Limit: DefaultLimit}
	q := r.URL.Query()
	for name, vals := range q {
		if name != "limit" && name != "cursor" && !slices.Contains(allowed, name) {
			return nil, badRequest(name, "unknown query parameter %q (accepted: %s)", name, strings.Join(append([]string{"limit", "cursor"}, allowed...), ", "))
		}
		if len(vals) > 1 {
			return nil, badRequest(name, "query parameter %q given %d times; give it once", name, len(vals))
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return nil, badRequest("limit", "limit must be an integer from 1 to %d, got %q", MaxLimit, v)
		}
		p.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		id, ok := decodeCursor(v)
		if !ok {
			return nil, badRequest("cursor", "cursor %q is not one this API returned; pass next_cursor back unchanged", v)
		}
		p.BeforeID = id
	}
	p.Name = q.Get("name")
	if v := q.Get("status"); v != "" {
		if !slices.Contains(statuses, v) {
			return nil, badRequest("status", "unknown status %q (want one of %s)", v, strings.Join(statuses, ", "))
		}
		p.Status = v
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"schedule_id", &p.ScheduleID}, {"job_definition_id", &p.JobDefinitionID}} {
		if v := q.Get(f.name); v != "" {
			id, ok := parseID(v)
			if !ok {
				return nil, badRequest(f.name, "%s must be a positive integer, got %q", f.name, v)
			}
			*f.dst = id
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", &p.Since}, {"until", &p.Until}} {
		if v := q.Get(f.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, badRequest(f.name, "%s must be an RFC 3339 time such as 2025-01-02T15:04:05Z, got %q", f.name, v)
			}
			*f.dst = t
		}
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Until.After(p.Since) {
		return nil, badRequest("until", "until must be after since")
	}
	scopeList(r, p)
	// One more row than shown tells whether another page exists.
	p.Limit++
	return p, nil
}

// pageOf trims the extra row listQuery asked for and makes the cursor.
func pageOf[T any](items []T, p *chimedb.AdminListParams, id func(*T) int64) List[T] {
	out := List[T]{Items: items}
	if out.Items == nil {
		out.Items = []T{}
	}
	if shown := p.Limit - 1; len(items) > shown {
		out.Items = items[:shown]
		out.NextCursor = encodeCursor(id(&out.Items[shown-1]))
	}
	return out
}

func parseID(s string) (int64, bool) {
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

// pathID reads the {id} path segment.
func pathID(r *http.Request, what string) (int64, *apiError) {
	v := r.PathValue("id")
	id, ok := parseID(v)
	if !ok {
		return 0, badRequest("id", "%s id must be a positive integer, got %q", what, v)
	}
	return id, nil
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
