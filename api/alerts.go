package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Alerting's doors: channels, rules, the alerts outbox, and a test send
// (package alert does the work; docs/alerts.md). A channel's secrets — its
// URL (a Slack URL is its token), signing key and header values — are
// written, never read back: the views say only whether they are set.

// AlertChannelView is a channel as the API shows it.
type AlertChannelView struct {
	ID         int64                   `json:"id"`
	Name       string                  `json:"name"`
	Kind       models.AlertChannelKind `json:"kind"`
	Recipients string                  `json:"recipients,omitempty"`
	// URL is the channel's URL reduced to scheme and host: the path and
	// query of a webhook URL often are its token.
	URL            string    `json:"url,omitempty"`
	URLSet         bool      `json:"url_set"`
	SigningKeySet  bool      `json:"signing_key_set"`
	HeaderNames    []string  `json:"header_names"`
	TimeoutSeconds int       `json:"timeout_seconds"`
	Enabled        bool      `json:"enabled"`
	Invalid        string    `json:"invalid,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func channelView(c *models.AlertChannel) AlertChannelView {
	v := AlertChannelView{ID: c.ID, Name: c.Name, Kind: c.Kind, Recipients: c.Recipients, URLSet: c.URL != "",
		SigningKeySet: c.SigningKey != "", TimeoutSeconds: c.TimeoutSeconds, Enabled: c.Enabled, Invalid: c.Invalid,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, HeaderNames: []string{}}
	if u, err := url.Parse(c.URL); err == nil && u.Scheme != "" && u.Host != "" {
		v.URL = u.Scheme + "://" + u.Host + "/…"
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(c.Headers, &h) == nil {
		for k := range h {
			v.HeaderNames = append(v.HeaderNames, k)
		}
		sort.Strings(v.HeaderNames)
	}
	// An invalid row's reason may quote what it holds; keep secrets out.
	for _, s := range []string{c.URL, c.SigningKey} {
		if s != "" {
			v.Invalid = strings.ReplaceAll(v.Invalid, s, "…")
		}
	}
	return v
}

// alertChannelRequest creates a channel or, in a PATCH, changes the fields
// it names.
type alertChannelRequest struct {
	Name           *string            `json:"name"`
	Kind           *string            `json:"kind"`
	URL            *string            `json:"url"`
	Recipients     *string            `json:"recipients"`
	SigningKey     *string            `json:"signing_key"`
	Headers        *map[string]string `json:"headers"`
	TimeoutSeconds *int               `json:"timeout_seconds"`
	Enabled        *bool              `json:"enabled"`
}

func (q *alertChannelRequest) apply(c *models.AlertChannel) *apiError {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.Name, q.Name)
	if q.Kind != nil {
		c.Kind = models.AlertChannelKind(*q.Kind)
	}
	set(&c.URL, q.URL)
	set(&c.Recipients, q.Recipients)
	set(&c.SigningKey, q.SigningKey)
	if q.Headers != nil {
		if len(*q.Headers) == 0 {
			c.Headers = nil
		} else {
			raw, _ := json.Marshal(*q.Headers)
			c.Headers = raw
		}
	}
	if q.TimeoutSeconds != nil {
		c.TimeoutSeconds = *q.TimeoutSeconds
	}
	if q.Enabled != nil {
		c.Enabled = *q.Enabled
	}
	if err := c.Check(); err != nil {
		msg := err.Error()
		for _, s := range []string{c.URL, c.SigningKey} {
			if s != "" {
				msg = strings.ReplaceAll(msg, s, "…")
			}
		}
		return badRequest(fieldOf(msg), "%s", msg)
	}
	return nil
}

// fieldOf is the column a models check error starts with ("url: ...").
func fieldOf(msg string) string {
	if f, _, ok := strings.Cut(msg, ":"); ok && !strings.ContainsAny(f, " \n") {
		return f
	}
	return ""
}

func (s *Server) alertStore() (chimedb.AlertStore, *apiError) {
	if s.cfg.Alerts == nil {
		return nil, &apiError{status: http.StatusNotImplemented, Error: Error{Error: "alerting is not available on this node"}}
	}
	return s.cfg.Alerts, nil
}

func (s *Server) findChannel(ctx context.Context, st chimedb.AlertStore, id int64, name string) (*models.AlertChannel, error) {
	cs, err := st.ListAlertChannels(ctx)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		if (id != 0 && cs[i].ID == id) || (name != "" && cs[i].Name == name) {
			return &cs[i], nil
		}
	}
	return nil, errors.New("alert channel: " + chimedb.ErrNotFound.Error())
}

func (s *Server) listAlertChannels(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	cs, err := st.ListAlertChannels(r.Context())
	if err != nil {
		return s.fromStore(r, err, "an alert channel")
	}
	out := List[AlertChannelView]{Items: make([]AlertChannelView, 0, len(cs))}
	for i := range cs {
		out.Items = append(out.Items, channelView(&cs[i]))
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func (s *Server) createAlertChannel(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	var req alertChannelRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	c := &models.AlertChannel{TimeoutSeconds: 10, Enabled: true}
	if e := req.apply(c); e != nil {
		return e
	}
	if err := st.SaveAlertChannel(r.Context(), c); err != nil {
		return s.fromStore(r, err, "an alert channel")
	}
	w.Header().Set("Location", Prefix+"/alert-channels/"+itoa(c.ID))
	s.writeJSON(w, r, http.StatusCreated, channelView(c))
	return nil
}

func (s *Server) updateAlertChannel(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	id, e := pathID(r, "alert channel")
	if e != nil {
		return e
	}
	c, err := s.findChannel(r.Context(), st, id, "")
	if err != nil {
		return notFound("alert channel %d does not exist", id)
	}
	var req alertChannelRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	c.Invalid = ""
	if e := req.apply(c); e != nil {
		return e
	}
	if err := st.SaveAlertChannel(r.Context(), c); err != nil {
		return s.fromStore(r, err, "an alert channel")
	}
	s.writeJSON(w, r, http.StatusOK, channelView(c))
	return nil
}

func (s *Server) deleteAlertChannel(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	id, e := pathID(r, "alert channel")
	if e != nil {
		return e
	}
	if err := st.DeleteAlertChannel(r.Context(), id); err != nil {
		return s.fromStore(r, err, "an alert channel")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// AlertTestResult is the answer of a test send.
type AlertTestResult struct {
	Sent  bool   `json:"sent"`
	Error string `json:"error,omitempty"`
}

// testAlertChannel sends a test message through the channel now, outside
// the outbox, and says how it went: 200 with sent false and the error when
// the receiver failed it.
func (s *Server) testAlertChannel(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	if s.cfg.TestAlertChannel == nil {
		return &apiError{status: http.StatusNotImplemented, Error: Error{Error: "this node cannot send test alerts"}}
	}
	id, e := pathID(r, "alert channel")
	if e != nil {
		return e
	}
	c, err := s.findChannel(r.Context(), st, id, "")
	if err != nil {
		return notFound("alert channel %d does not exist", id)
	}
	if c.Invalid != "" {
		return badRequest("", "alert channel %s is invalid: %s", c.Name, channelView(c).Invalid)
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(models.MaxAlertTimeoutSeconds+5)*time.Second)
	defer cancel()
	res := AlertTestResult{Sent: true}
	if err := s.cfg.TestAlertChannel(ctx, c); err != nil {
		msg := err.Error()
		for _, sec := range []string{c.URL, c.SigningKey} {
			if sec != "" {
				msg = strings.ReplaceAll(msg, sec, "…")
			}
		}
		res = AlertTestResult{Error: msg}
	}
	s.writeJSON(w, r, http.StatusOK, res)
	return nil
}

// alertRuleRequest creates a rule or, in a PATCH, changes the fields it
// names. channel names the channel by name, channel_id by id.
type alertRuleRequest struct {
	Name            *string          `json:"name"`
	Event           *string          `json:"event"`
	Scope           *string          `json:"scope"`
	DefinitionID    *int64           `json:"definition_id"`
	ScheduleID      *int64           `json:"schedule_id"`
	Queue           *string          `json:"queue"`
	WorkflowID      *int64           `json:"workflow_id"`
	ChannelID       *int64           `json:"channel_id"`
	Channel         *string          `json:"channel"`
	ThrottleSeconds *int             `json:"throttle_seconds"`
	Params          *json.RawMessage `json:"params"`
	Enabled         *bool            `json:"enabled"`
}

func (s *Server) applyRule(ctx context.Context, st chimedb.AlertStore, q *alertRuleRequest, rl *models.AlertRule) *apiError {
	if q.Name != nil {
		rl.Name = *q.Name
	}
	if q.Event != nil {
		rl.Event = models.AlertEvent(*q.Event)
	}
	if q.Scope != nil {
		rl.Scope = models.AlertScope(*q.Scope)
	}
	if q.DefinitionID != nil {
		rl.DefinitionID = q.DefinitionID
	}
	if q.ScheduleID != nil {
		rl.ScheduleID = q.ScheduleID
	}
	if q.Queue != nil {
		rl.Queue = q.Queue
	}
	if q.WorkflowID != nil {
		rl.WorkflowID = q.WorkflowID
	}
	if q.ThrottleSeconds != nil {
		rl.ThrottleSeconds = *q.ThrottleSeconds
	}
	if q.Params != nil {
		rl.Params = models.JSON(*q.Params)
	}
	if q.Enabled != nil {
		rl.Enabled = *q.Enabled
	}
	switch {
	case q.Channel != nil:
		c, err := s.findChannel(ctx, st, 0, *q.Channel)
		if err != nil {
			return badRequest("channel", "alert channel %q does not exist", *q.Channel)
		}
		rl.ChannelID = c.ID
	case q.ChannelID != nil:
		if _, err := s.findChannel(ctx, st, *q.ChannelID, ""); err != nil {
			return badRequest("channel_id", "alert channel %d does not exist", *q.ChannelID)
		}
		rl.ChannelID = *q.ChannelID
	}
	if rl.ChannelID == 0 {
		return badRequest("channel", "channel (a name) or channel_id is required")
	}
	if rl.Scope != models.ScopeDefinition {
		rl.DefinitionID = nil
	}
	if rl.Scope != models.ScopeSchedule {
		rl.ScheduleID = nil
	}
	if rl.Scope != models.ScopeQueue {
		rl.Queue = nil
	}
	if rl.Scope != models.ScopeWorkflow {
		rl.WorkflowID = nil
	}
	if _, err := rl.ParsedParams(); err != nil {
		return badRequest(fieldOf(err.Error()), "%s", err.Error())
	}
	admin := s.st.Admin()
	if rl.DefinitionID != nil {
		if _, err := admin.GetDefinition(ctx, *rl.DefinitionID); err != nil {
			return badRequest("definition_id", "definition %d does not exist", *rl.DefinitionID)
		}
	}
	if rl.ScheduleID != nil {
		if _, err := admin.GetSchedule(ctx, *rl.ScheduleID); err != nil {
			return badRequest("schedule_id", "schedule %d does not exist", *rl.ScheduleID)
		}
	}
	if rl.WorkflowID != nil {
		ws, e := s.workflows()
		if e != nil {
			return e
		}
		if _, err := ws.GetWorkflow(ctx, *rl.WorkflowID); err != nil {
			return badRequest("workflow_id", "workflow %d does not exist", *rl.WorkflowID)
		}
	}
	return nil
}

func (s *Server) listAlertRules(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	rs, err := st.ListAlertRules(r.Context())
	if err != nil {
		return s.fromStore(r, err, "an alert rule")
	}
	if rs == nil {
		rs = []models.AlertRule{}
	}
	for i := range rs {
		rs[i].Params = showJSON(rs[i].Params)
	}
	s.writeJSON(w, r, http.StatusOK, List[models.AlertRule]{Items: rs})
	return nil
}

// showJSON is j when it is JSON, else nil: a rule's params written by SQL
// may be anything, and the rule's invalid says why.
func showJSON(j models.JSON) models.JSON {
	if len(j) == 0 || !json.Valid(j) {
		return nil
	}
	return j
}

func (s *Server) createAlertRule(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	var req alertRuleRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	rl := &models.AlertRule{Scope: models.ScopeAll, Enabled: true}
	if e := s.applyRule(r.Context(), st, &req, rl); e != nil {
		return e
	}
	if err := st.SaveAlertRule(r.Context(), rl); err != nil {
		return s.fromStore(r, err, "an alert rule")
	}
	w.Header().Set("Location", Prefix+"/alert-rules/"+itoa(rl.ID))
	s.writeJSON(w, r, http.StatusCreated, rl)
	return nil
}

func (s *Server) updateAlertRule(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	id, e := pathID(r, "alert rule")
	if e != nil {
		return e
	}
	rs, err := st.ListAlertRules(r.Context())
	if err != nil {
		return s.fromStore(r, err, "an alert rule")
	}
	i := slices.IndexFunc(rs, func(x models.AlertRule) bool { return x.ID == id })
	if i < 0 {
		return notFound("alert rule %d does not exist", id)
	}
	rl := rs[i]
	rl.Invalid = ""
	var req alertRuleRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if e := s.applyRule(r.Context(), st, &req, &rl); e != nil {
		return e
	}
	if err := st.SaveAlertRule(r.Context(), &rl); err != nil {
		return s.fromStore(r, err, "an alert rule")
	}
	s.writeJSON(w, r, http.StatusOK, rl)
	return nil
}

func (s *Server) deleteAlertRule(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	id, e := pathID(r, "alert rule")
	if e != nil {
		return e
	}
	if err := st.DeleteAlertRule(r.Context(), id); err != nil {
		return s.fromStore(r, err, "an alert rule")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var alertStatuses = []string{string(models.AlertPending), string(models.AlertSent), string(models.AlertFailed), string(models.AlertSuppressed)}

// listAlerts lists the alerts outbox, newest first, with each delivery's
// state.
func (s *Server) listAlerts(w http.ResponseWriter, r *http.Request) *apiError {
	st, e := s.alertStore()
	if e != nil {
		return e
	}
	p, e := listQuery(r, []string{"status"}, alertStatuses)
	if e != nil {
		return e
	}
	items, err := st.ListAlerts(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "an alert")
	}
	s.writeJSON(w, r, http.StatusOK, pageOf(items, p, func(a *models.Alert) int64 { return a.ID }))
	return nil
}
