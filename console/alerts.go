package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/models"
)

// The alerts page: channels (with a "Send test" button), rules, and the
// alerts recorded with their delivery state. It reads through the API, as
// the writes go, so a channel's secrets reach the page already hidden.

type alertsData struct {
	Channels []api.AlertChannelView
	Rules    []models.AlertRule
	Alerts   []models.Alert
	Names    map[int64]string // channel names by id

	// The create forms, offered to the roles the API lets create: a
	// channel to admins, a rule to editors and admins. CF never holds a
	// secret (url, signing_key, headers): shown again after an error, they
	// are typed again.
	CF, RF      *form
	Kinds       []models.AlertChannelKind
	Events      []models.AlertEvent
	Scopes      []models.AlertScope
	Definitions []models.JobDefinition
}

var (
	channelFields = []string{"name", "kind", "url", "recipients", "signing_key", "headers", "timeout_seconds"}
	ruleFields    = []string{"name", "event", "channel", "scope", "definition_id", "schedule_id", "queue", "workflow_id",
		"throttle_seconds", "params"}
	channelSecrets = []string{"url", "signing_key", "headers"}
	alertDone      = map[string]string{"channel": "Channel created.", "rule": "Rule created."}
)

func (c *Console) alertsData(r *http.Request) (*alertsData, *apiResult) {
	d := &alertsData{Names: map[int64]string{}}
	var chans api.List[api.AlertChannelView]
	var rules api.List[models.AlertRule]
	var alerts api.List[models.Alert]
	for _, call := range []struct {
		path string
		into any
	}{{"/alert-channels", &chans}, {"/alert-rules", &rules}, {"/alerts?limit=50", &alerts}} {
		res := c.callAPI(r.Context(), http.MethodGet, api.Prefix+call.path, nil)
		if !res.ok() {
			return nil, res
		}
		if err := res.decode(call.into); err != nil {
			return nil, &apiResult{Status: http.StatusInternalServerError, Err: err.Error()}
		}
	}
	d.Channels, d.Rules, d.Alerts = chans.Items, rules.Items, alerts.Items
	for _, ch := range d.Channels {
		d.Names[ch.ID] = ch.Name
	}
	return d, nil
}

func (c *Console) alerts(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderAlerts(w, r, s, alertDone[r.URL.Query().Get("done")], "")
}

func (c *Console) renderAlerts(w http.ResponseWriter, r *http.Request, s *session, flash, fail string) {
	c.renderAlertsForms(w, r, s, http.StatusOK, flash, fail, nil, nil)
}

// renderAlertsForms is the alerts page with the create forms as given
// (nil: empty ones).
func (c *Console) renderAlertsForms(w http.ResponseWriter, r *http.Request, s *session, status int, flash, fail string, cf, rf *form) {
	d, res := c.alertsData(r)
	if res != nil {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	if cf == nil {
		cf = newForm(url.Values{"kind": {string(models.ChannelWebhook)}, "timeout_seconds": {"10"}})
	}
	if rf == nil {
		rf = newForm(url.Values{"scope": {string(models.ScopeAll)}, "throttle_seconds": {"0"}})
	}
	for _, k := range channelSecrets {
		cf.Values.Del(k)
	}
	d.CF, d.RF = cf, rf
	d.Kinds = []models.AlertChannelKind{models.ChannelWebhook, models.ChannelSlack, models.ChannelEmail}
	d.Events, d.Scopes = models.AlertEvents, models.AlertScopes
	if s.Can("edit") {
		defs, err := c.st.Admin().DefinitionChoices(r.Context())
		if err != nil {
			c.dbFail(w, r, s, err)
			return
		}
		d.Definitions = defs
	}
	c.render(w, status, "alerts", &page{Title: "Alerts", Nav: "alerts", Session: s, Flash: flash, Error: fail, Data: d})
}

// channelBody turns the channel form into the API's body: text to
// numbers and JSON; whether the channel is valid is the API's call.
func channelBody(f *form) map[string]any {
	body := map[string]any{}
	for _, k := range []string{"name", "kind", "url", "recipients"} {
		if v := strings.TrimSpace(f.Get(k)); v != "" {
			body[k] = v
		}
	}
	if v := f.Get("signing_key"); v != "" {
		body["signing_key"] = v
	}
	intField(f, body, "timeout_seconds")
	if h := strings.TrimSpace(f.Get("headers")); h != "" {
		var m map[string]string
		if err := json.Unmarshal([]byte(h), &m); err != nil {
			f.Errors["headers"] = `write a JSON object of strings, such as {"Authorization": "Bearer …"}`
		} else {
			body["headers"] = m
		}
	}
	return body
}

// ruleBody is channelBody for the rule form.
func ruleBody(f *form) map[string]any {
	body := map[string]any{}
	for _, k := range []string{"name", "event", "channel", "scope", "queue"} {
		if v := strings.TrimSpace(f.Get(k)); v != "" {
			body[k] = v
		}
	}
	for _, k := range []string{"definition_id", "schedule_id", "workflow_id", "throttle_seconds"} {
		intField(f, body, k)
	}
	jsonField(f, body, "params")
	if body["params"] == nil {
		delete(body, "params")
	}
	return body
}

// intField converts field k, when given, to a whole number.
func intField(f *form, body map[string]any, k string) {
	v := strings.TrimSpace(f.Get(k))
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f.Errors[k] = "enter a whole number"
		return
	}
	body[k] = n
}

// createChannel is the channel form's post; the API decides who may.
func (c *Console) createChannel(w http.ResponseWriter, r *http.Request, s *session) {
	_, ok := c.submit(r, http.MethodPost, api.Prefix+"/alert-channels", channelBody, channelFields, func(status int, f *form) {
		c.renderAlertsForms(w, r, s, status, "", f.Top, f, nil)
	})
	if ok {
		http.Redirect(w, r, "/alerts?done=channel#h-channels", http.StatusSeeOther)
	}
}

// createRule is the rule form's post.
func (c *Console) createRule(w http.ResponseWriter, r *http.Request, s *session) {
	_, ok := c.submit(r, http.MethodPost, api.Prefix+"/alert-rules", ruleBody, ruleFields, func(status int, f *form) {
		c.renderAlertsForms(w, r, s, status, "", f.Top, nil, f)
	})
	if ok {
		http.Redirect(w, r, "/alerts?done=rule#h-rules", http.StatusSeeOther)
	}
}

// testChannel sends a test message through a channel and shows how it went.
func (c *Console) testChannel(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no alert channel with this id.")
		return
	}
	res := c.callAPI(r.Context(), http.MethodPost, fmt.Sprintf("%s/alert-channels/%d/test", api.Prefix, id), nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	var out api.AlertTestResult
	_ = res.decode(&out)
	if out.Sent {
		c.renderAlerts(w, r, s, "Test message sent.", "")
		return
	}
	c.renderAlerts(w, r, s, "", "The test message was not delivered: "+out.Error)
}
