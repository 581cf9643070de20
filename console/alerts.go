package console

import (
	"fmt"
	"net/http"

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
}

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
	c.renderAlerts(w, r, s, "", "")
}

func (c *Console) renderAlerts(w http.ResponseWriter, r *http.Request, s *session, flash, fail string) {
	d, res := c.alertsData(r)
	if res != nil {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	c.render(w, http.StatusOK, "alerts", &page{Title: "Alerts", Nav: "alerts", Session: s, Flash: flash, Error: fail, Data: d})
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
