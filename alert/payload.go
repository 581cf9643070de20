package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
)

// PayloadVersion is Payload.Version; a change a receiver must know about
// increases it.
const PayloadVersion = 1

// Payload is the JSON body a webhook channel receives (docs/alerts.md has
// its schema and an example of each event).
type Payload struct {
	Version    int               `json:"version"`
	ID         string            `json:"id"`       // the dedupe key: the same for every try of one alert
	AlertID    int64             `json:"alert_id"` // alerts.id; 0 for a test
	Event      models.AlertEvent `json:"event"`
	State      models.AlertState `json:"state"` // firing or resolved
	Summary    string            `json:"summary"`
	OccurredAt time.Time         `json:"occurred_at"`
	Rule       *Ref              `json:"rule,omitempty"`
	Subject    string            `json:"subject"`
	Suppressed int               `json:"suppressed"` // alerts of this rule and subject held back by the throttle since the last one sent
	Definition *Ref              `json:"definition,omitempty"`
	Schedule   *Ref              `json:"schedule,omitempty"`
	Job        *JobInfo          `json:"job,omitempty"`
	Workflow   *Ref              `json:"workflow,omitempty"`
	Run        *RunInfo          `json:"run,omitempty"`
	Node       string            `json:"node,omitempty"`
	Details    map[string]any    `json:"details,omitempty"`
}

// RunInfo is the workflow run an alert is about.
type RunInfo struct {
	ID         int64            `json:"id"`
	Status     models.RunStatus `json:"status"`
	Generation int              `json:"generation"`
	StartedAt  *time.Time       `json:"started_at,omitempty"`
	FinishedAt *time.Time       `json:"finished_at,omitempty"`
	Reason     string           `json:"reason,omitempty"`
}

// Ref names a row.
type Ref struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// JobInfo is the job an alert is about.
type JobInfo struct {
	ID          int64            `json:"id"`
	Status      models.JobStatus `json:"status"`
	Attempt     int              `json:"attempt"`
	MaxAttempts int              `json:"max_attempts"`
	ScheduledAt time.Time        `json:"scheduled_at"`
	StartedAt   *time.Time       `json:"started_at,omitempty"`
	FinishedAt  *time.Time       `json:"finished_at,omitempty"`
	NodeID      string           `json:"node_id,omitempty"`
	Error       string           `json:"error,omitempty"`
	CatchUp     bool             `json:"catch_up,omitempty"`
	MissedFires int              `json:"missed_fires,omitempty"`
	Recoveries  int              `json:"recoveries,omitempty"`
}

// maxErrorBytes bounds a job's error quoted in a payload.
const maxErrorBytes = 2 << 10

func jobInfo(j *models.Job) *JobInfo {
	ji := &JobInfo{ID: j.ID, Status: j.Status, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, ScheduledAt: j.ScheduledAt.UTC(),
		StartedAt: utcPtr(j.StartedAt), FinishedAt: utcPtr(j.FinishedAt), NodeID: j.NodeID, CatchUp: j.CatchUp,
		MissedFires: j.MissedFires, Recoveries: j.Recoveries}
	if j.Error != nil {
		e := *j.Error
		if len(e) > maxErrorBytes {
			e = strings.ToValidUTF8(e[:maxErrorBytes], "") + "..."
		}
		ji.Error = e
	}
	return ji
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Sign returns the X-Chime-Signature value of body sent at timestamp ts
// (Unix seconds): "v1=" and the hex HMAC-SHA256, keyed by the channel's
// signing key, of ts, ".", and the body.
func Sign(key []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify is what a receiver written in Go does (docs/alerts.md): it
// checks the signature of body and refuses a timestamp further than
// tolerance from now, so a captured request cannot be replayed later.
func Verify(key []byte, tsHeader, sigHeader string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("bad timestamp %q", tsHeader)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("timestamp %d is %v from now: a replay?", ts, d)
	}
	if !hmac.Equal([]byte(Sign(key, ts, body)), []byte(sigHeader)) {
		return fmt.Errorf("signature mismatch")
	}
	return nil
}

// slackText renders the alert as a chat line: Slack, Mattermost and the
// like show it as is (mrkdwn: *bold*).
func slackText(p *Payload) string {
	icon := ":rotating_light:"
	if p.State == models.AlertResolved {
		icon = ":white_check_mark:"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s *%s* %s", icon, p.Event, p.Summary)
	if p.Suppressed > 0 {
		fmt.Fprintf(&b, " (%d more held back by the throttle)", p.Suppressed)
	}
	if p.Rule != nil {
		fmt.Fprintf(&b, "\nrule %s", p.Rule.Name)
	}
	return b.String()
}

// emailSubject and emailText render the alert as an email.
func emailSubject(p *Payload) string {
	state := "ALERT"
	if p.State == models.AlertResolved {
		state = "RESOLVED"
	}
	return fmt.Sprintf("[chime] %s %s: %s", state, p.Event, truncate(p.Summary, 150))
}

func emailText(p *Payload) string {
	var b strings.Builder
	b.WriteString(p.Summary + "\n\n")
	raw, _ := json.MarshalIndent(p, "", "  ")
	b.Write(raw)
	b.WriteString("\n")
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// TestPayload is what `chime alert test` sends through channel c.
func TestPayload(c *models.AlertChannel, now time.Time) *Payload {
	return &Payload{Version: PayloadVersion, ID: fmt.Sprintf("test:%d:%d", c.ID, now.UnixNano()), Event: models.EventTest,
		State: models.AlertFiring, OccurredAt: now.UTC(), Subject: "channel:" + c.Name,
		Summary: fmt.Sprintf("chime test alert through channel %s: if you read this, the channel works", c.Name)}
}
