package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	_ "time/tzdata" // rules name IANA zones; a bare container may have no zoneinfo
)

// AlertChannelKind is alert_channels.kind: how an alert is delivered.
type AlertChannelKind string

const (
	// ChannelEmail mails the alert to recipients through chime's SMTP setup.
	ChannelEmail AlertChannelKind = "email"
	// ChannelWebhook POSTs the documented JSON payload (docs/alerts.md) to
	// url, signed with signing_key.
	ChannelWebhook AlertChannelKind = "webhook"
	// ChannelSlack POSTs {"text": ...} to a Slack-compatible incoming
	// webhook url (Slack, Mattermost, Rocket.Chat, Discord's /slack).
	ChannelSlack AlertChannelKind = "slack"
)

// AlertChannel is where alerts go. Table alert_channels. URL (webhook URLs
// embed tokens) and SigningKey are secrets: the API, CLI and console show
// only whether they are set.
type AlertChannel struct {
	ID         int64            `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name       string           `gorm:"column:name" json:"name"`
	Kind       AlertChannelKind `gorm:"column:kind" json:"kind"`
	URL        string           `gorm:"column:url" json:"-"`
	Recipients string           `gorm:"column:recipients" json:"recipients"`
	SigningKey string           `gorm:"column:signing_key" json:"-"`
	// Headers is a JSON object of extra request headers (string values).
	Headers        JSON      `gorm:"column:headers" json:"headers,omitempty"`
	TimeoutSeconds int       `gorm:"column:timeout_seconds" json:"timeout_seconds"`
	Enabled        bool      `gorm:"column:enabled" json:"enabled"`
	CreatedAt      time.Time `gorm:"column:created_at" json:"created_at"`
	UpdatedAt      time.Time `gorm:"column:updated_at" json:"updated_at"`

	// Invalid is no column: why the row, as read, cannot deliver.
	Invalid string `gorm:"-" json:"invalid,omitempty"`
}

// TableName implements gorm's tabler.
func (AlertChannel) TableName() string { return "alert_channels" }

// Bounds of a channel's columns.
const (
	MaxAlertTimeoutSeconds = 60
	MaxAlertHeaders        = 20
	MaxAlertURLBytes       = 2048
)

// reservedHeaders are set by chime on every webhook request; a channel
// cannot replace them, or a receiver could not trust the signature.
var reservedHeaders = map[string]bool{
	"content-type": true, "content-length": true, "host": true, "user-agent": true,
	"x-chime-signature": true, "x-chime-timestamp": true, "x-chime-alert-id": true,
}

// HeaderMap returns the channel's extra headers, checked.
func (c *AlertChannel) HeaderMap() (map[string]string, error) {
	if len(c.Headers) == 0 || string(c.Headers) == "null" {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal(c.Headers, &h); err != nil {
		return nil, fmt.Errorf("headers: not a JSON object of strings: %w", err)
	}
	if len(h) > MaxAlertHeaders {
		return nil, fmt.Errorf("headers: %d headers, at most %d", len(h), MaxAlertHeaders)
	}
	for k, v := range h {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("headers: %q is not a valid header", k)
		}
		if reservedHeaders[strings.ToLower(k)] {
			return nil, fmt.Errorf("headers: %s is set by chime and cannot be replaced", k)
		}
	}
	return h, nil
}

// CheckURL refuses what a webhook channel must not POST to: anything but
// an absolute http or https URL with a host.
func CheckURL(raw string) error {
	if raw == "" {
		return errors.New("url: required")
	}
	if len(raw) > MaxAlertURLBytes {
		return fmt.Errorf("url: longer than %d bytes", MaxAlertURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's error repeats the URL, which may hold a token.
		return errors.New("url: not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url: scheme %q refused: only http and https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("url: no host")
	}
	if u.User != nil {
		return errors.New("url: credentials in the URL are refused; use headers")
	}
	return nil
}

// Check says why the channel cannot deliver as it is, or nil.
func (c *AlertChannel) Check() error {
	var errs []error
	if strings.TrimSpace(c.Name) == "" || len(c.Name) > 191 {
		errs = append(errs, errors.New("name: required, at most 191 bytes"))
	}
	switch c.Kind {
	case ChannelWebhook, ChannelSlack:
		if err := CheckURL(c.URL); err != nil {
			errs = append(errs, err)
		}
	case ChannelEmail:
		if strings.TrimSpace(c.Recipients) == "" {
			errs = append(errs, errors.New("recipients: required for an email channel"))
		}
	default:
		errs = append(errs, fmt.Errorf("kind: %q is not one of email, webhook, slack", c.Kind))
	}
	if c.TimeoutSeconds < 1 || c.TimeoutSeconds > MaxAlertTimeoutSeconds {
		errs = append(errs, fmt.Errorf("timeout_seconds: %d is not within 1-%d", c.TimeoutSeconds, MaxAlertTimeoutSeconds))
	}
	if _, err := c.HeaderMap(); err != nil {
		errs = append(errs, err)
	}
	if len(c.SigningKey) > 512 {
		errs = append(errs, errors.New("signing_key: longer than 512 bytes"))
	}
	return errors.Join(errs...)
}

// AlertEvent is alert_rules.event: what a rule watches for.
type AlertEvent string

// The events. The job events are read from jobs as they finish; the others
// are conditions judged by the maintenance leader on its clock.
const (
	EventJobFailed         AlertEvent = "job_failed"         // failed for good (no retry left or none asked)
	EventRetriesExhausted  AlertEvent = "retries_exhausted"  // failed for good after more than one attempt
	EventJobRecovered      AlertEvent = "job_recovered"      // succeeded, and the subject's previous final job had not
	EventJobCanceled       AlertEvent = "job_canceled"       // canceled or stopped
	EventCatchUp           AlertEvent = "catch_up"           // a catch-up job that collapsed missed fires
	EventJobRescued        AlertEvent = "job_rescued"        // finished after a lost node or the reconciler reset it
	EventDeadline          AlertEvent = "deadline"           // a schedule's run not done by a wall-clock time, or not started in time
	EventSlow              AlertEvent = "slow"               // a running job longer than a duration or k × the recent median
	EventBacklog           AlertEvent = "backlog"            // due jobs waiting too long, or too many for too long
	EventNodeLost          AlertEvent = "node_lost"          // a node declared dead
	EventLeaseFlapping     AlertEvent = "lease_flapping"     // a lease changed hands more than max_changes times in within_seconds
	EventWorkflowFailed    AlertEvent = "workflow_failed"    // a workflow run ended failed
	EventWorkflowSucceeded AlertEvent = "workflow_succeeded" // a workflow run ended succeeded
	EventTest              AlertEvent = "test"               // chime alert test: no rule
)

// AlertEvents lists the events a rule may name.
var AlertEvents = []AlertEvent{EventJobFailed, EventRetriesExhausted, EventJobRecovered, EventJobCanceled, EventCatchUp,
	EventJobRescued, EventDeadline, EventSlow, EventBacklog, EventNodeLost, EventLeaseFlapping,
	EventWorkflowFailed, EventWorkflowSucceeded}

// Resolvable reports whether the event is a condition that clears, with a
// "resolved" message when it does.
func (e AlertEvent) Resolvable() bool {
	return e == EventDeadline || e == EventSlow || e == EventBacklog || e == EventLeaseFlapping
}

// AlertScope is alert_rules.scope.
type AlertScope string

const (
	ScopeAll        AlertScope = "all"
	ScopeDefinition AlertScope = "definition" // definition_id
	ScopeSchedule   AlertScope = "schedule"   // schedule_id
	ScopeQueue      AlertScope = "queue"      // queue: the jobs that run in it
	ScopeWorkflow   AlertScope = "workflow"   // workflow_id: the jobs of its runs
)

// AlertScopes lists the scopes a rule may name.
var AlertScopes = []AlertScope{ScopeAll, ScopeDefinition, ScopeSchedule, ScopeQueue, ScopeWorkflow}

// AlertRule says which event, about what, goes to which channel, and how
// often. Table alert_rules. Params holds the event's thresholds (see
// AlertParams).
type AlertRule struct {
	ID              int64      `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name            string     `gorm:"column:name" json:"name"`
	Event           AlertEvent `gorm:"column:event" json:"event"`
	Scope           AlertScope `gorm:"column:scope" json:"scope"`
	DefinitionID    *int64     `gorm:"column:definition_id" json:"definition_id"`
	ScheduleID      *int64     `gorm:"column:schedule_id" json:"schedule_id"`
	Queue           *string    `gorm:"column:queue" json:"queue"`
	WorkflowID      *int64     `gorm:"column:workflow_id" json:"workflow_id"`
	ChannelID       int64      `gorm:"column:channel_id" json:"channel_id"`
	ThrottleSeconds int        `gorm:"column:throttle_seconds" json:"throttle_seconds"`
	Params          JSON       `gorm:"column:params" json:"params,omitempty"`
	Enabled         bool       `gorm:"column:enabled" json:"enabled"`
	CreatedAt       time.Time  `gorm:"column:created_at" json:"created_at"`
	UpdatedAt       time.Time  `gorm:"column:updated_at" json:"updated_at"`

	// Invalid is no column: why the row, as read, cannot be evaluated.
	Invalid string `gorm:"-" json:"invalid,omitempty"`
}

// TableName implements gorm's tabler.
func (AlertRule) TableName() string { return "alert_rules" }

// MaxThrottleSeconds bounds alert_rules.throttle_seconds (a week).
const MaxThrottleSeconds = 7 * 24 * 3600

// AlertParams are alert_rules.params, by event:
//
//	deadline: {"by": "07:00", "time_zone": "Europe/Berlin"} (time_zone
//	          defaults to the schedule's) and/or {"start_within_seconds": 600}
//	slow:     {"max_seconds": 3600} and/or {"median_factor": 3, "median_of": 20}
//	backlog:  {"wait_seconds": 300} and/or {"max_due": 100, "for_seconds": 600}
//	lease_flapping: {"max_changes": 3, "within_seconds": 3600, "lease": "scheduler"}
type AlertParams struct {
	By                 string  `json:"by,omitempty"`
	TimeZone           string  `json:"time_zone,omitempty"`
	StartWithinSeconds int     `json:"start_within_seconds,omitempty"`
	MaxSeconds         int     `json:"max_seconds,omitempty"`
	MedianFactor       float64 `json:"median_factor,omitempty"`
	MedianOf           int     `json:"median_of,omitempty"`
	WaitSeconds        int     `json:"wait_seconds,omitempty"`
	MaxDue             int     `json:"max_due,omitempty"`
	ForSeconds         int     `json:"for_seconds,omitempty"`
	MaxChanges         int     `json:"max_changes,omitempty"`
	WithinSeconds      int     `json:"within_seconds,omitempty"`
	Lease              string  `json:"lease,omitempty"`

	// ByHour and ByMinute are By parsed; Loc is TimeZone loaded (nil:
	// the schedule's).
	ByHour, ByMinute int            `json:"-"`
	Loc              *time.Location `json:"-"`
}

// ParseClock reads a wall-clock time "HH:MM" (00:00-23:59).
func ParseClock(s string) (h, m int, err error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, 0, fmt.Errorf("%q is not a wall-clock time HH:MM from 00:00 to 23:59", s)
	}
	return t.Hour(), t.Minute(), nil
}

// ParsedParams checks the rule and returns its params; the error is the
// reason the rule is invalid.
func (r *AlertRule) ParsedParams() (*AlertParams, error) {
	var errs []error
	if strings.TrimSpace(r.Name) == "" || len(r.Name) > 191 {
		errs = append(errs, errors.New("name: required, at most 191 bytes"))
	}
	known := false
	for _, e := range AlertEvents {
		known = known || e == r.Event
	}
	if !known {
		errs = append(errs, fmt.Errorf("event: %q is not one of %v", r.Event, AlertEvents))
	}
	switch r.Scope {
	case ScopeAll:
	case ScopeDefinition:
		if r.DefinitionID == nil {
			errs = append(errs, errors.New("definition_id: required by scope definition"))
		}
	case ScopeSchedule:
		if r.ScheduleID == nil {
			errs = append(errs, errors.New("schedule_id: required by scope schedule"))
		}
	case ScopeQueue:
		if r.Queue == nil || *r.Queue == "" || len(*r.Queue) > MaxQueueNameLen {
			errs = append(errs, fmt.Errorf("queue: a queue name of 1..%d bytes is required by scope queue", MaxQueueNameLen))
		}
	case ScopeWorkflow:
		if r.WorkflowID == nil {
			errs = append(errs, errors.New("workflow_id: required by scope workflow"))
		}
	default:
		errs = append(errs, fmt.Errorf("scope: %q is not one of %v", r.Scope, AlertScopes))
	}
	if r.ThrottleSeconds < 0 || r.ThrottleSeconds > MaxThrottleSeconds {
		errs = append(errs, fmt.Errorf("throttle_seconds: %d is not within 0 (no throttle)-%d", r.ThrottleSeconds, MaxThrottleSeconds))
	}
	p := &AlertParams{}
	if len(r.Params) > 0 && string(r.Params) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(r.Params)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(p); err != nil {
			errs = append(errs, fmt.Errorf("params: %w", err))
		}
	}
	nonNeg := func(name string, v int) {
		if v < 0 || v > 366*24*3600 {
			errs = append(errs, fmt.Errorf("params.%s: %d is not within 0-%d", name, v, 366*24*3600))
		}
	}
	nonNeg("start_within_seconds", p.StartWithinSeconds)
	nonNeg("max_seconds", p.MaxSeconds)
	nonNeg("wait_seconds", p.WaitSeconds)
	nonNeg("for_seconds", p.ForSeconds)
	if p.MaxDue < 0 || p.MaxDue > 1_000_000 {
		errs = append(errs, fmt.Errorf("params.max_due: %d is not within 0-1000000", p.MaxDue))
	}
	if p.MedianOf < 0 || p.MedianOf > 1000 {
		errs = append(errs, fmt.Errorf("params.median_of: %d is not within 0-1000", p.MedianOf))
	}
	if p.MedianFactor < 0 || p.MedianFactor > 1000 || p.MedianFactor != p.MedianFactor {
		errs = append(errs, fmt.Errorf("params.median_factor: %v is not within 0-1000", p.MedianFactor))
	}
	if p.By != "" {
		h, m, err := ParseClock(p.By)
		if err != nil {
			errs = append(errs, fmt.Errorf("params.by: %w", err))
		}
		p.ByHour, p.ByMinute = h, m
	}
	if p.TimeZone != "" {
		loc, err := time.LoadLocation(p.TimeZone)
		if err != nil || p.TimeZone == "Local" {
			errs = append(errs, fmt.Errorf("params.time_zone: %q is not an IANA time zone", p.TimeZone))
		}
		p.Loc = loc
	}
	switch r.Event {
	case EventDeadline:
		if r.Scope != ScopeSchedule {
			errs = append(errs, errors.New("scope: a deadline rule is about one schedule (scope schedule)"))
		}
		if p.By == "" && p.StartWithinSeconds == 0 {
			errs = append(errs, errors.New("params: a deadline rule needs by (HH:MM) or start_within_seconds"))
		}
	case EventSlow:
		if p.MaxSeconds == 0 && p.MedianFactor == 0 {
			errs = append(errs, errors.New("params: a slow rule needs max_seconds or median_factor"))
		}
		if p.MedianFactor != 0 && p.MedianFactor < 1 {
			errs = append(errs, errors.New("params.median_factor: below 1 every run is slow"))
		}
	case EventBacklog:
		if p.WaitSeconds == 0 && p.MaxDue == 0 {
			errs = append(errs, errors.New("params: a backlog rule needs wait_seconds or max_due"))
		}
	case EventLeaseFlapping:
		errs = append(errs, p.checkFlapping(r.Scope)...)
	case EventWorkflowFailed, EventWorkflowSucceeded:
		if r.Scope != ScopeAll && r.Scope != ScopeWorkflow {
			errs = append(errs, fmt.Errorf("scope: a %s rule is about workflow runs (scope all or workflow)", r.Event))
		}
	}
	if r.Event != EventLeaseFlapping && (p.MaxChanges != 0 || p.WithinSeconds != 0 || p.Lease != "") {
		errs = append(errs, errors.New("params: max_changes, within_seconds and lease are lease_flapping's"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// AlertState is alerts.state.
type AlertState string

const (
	AlertFiring   AlertState = "firing"
	AlertResolved AlertState = "resolved"
)

// AlertStatus is alerts.status, its delivery.
type AlertStatus string

const (
	AlertPending    AlertStatus = "pending"
	AlertSent       AlertStatus = "sent"
	AlertFailed     AlertStatus = "failed"
	AlertSuppressed AlertStatus = "suppressed" // throttled: counted in the next one sent
)

// Alert is one occurrence a rule found, and its delivery: the outbox of
// alerts, as notifications is of emails. Table alerts. DedupeKey (rule,
// subject, occurrence) is unique, so the occurrence is recorded once
// however many times, or on however many nodes, it is found.
type Alert struct {
	ID        int64      `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	RuleID    int64      `gorm:"column:rule_id" json:"rule_id"`
	ChannelID int64      `gorm:"column:channel_id" json:"channel_id"`
	Event     AlertEvent `gorm:"column:event" json:"event"`
	State     AlertState `gorm:"column:state" json:"state"`
	// Subject is what the alert is about, e.g. "schedule:12", "job:345",
	// "node:web-1", "cluster"; throttling is per rule and subject.
	Subject   string `gorm:"column:subject" json:"subject"`
	DedupeKey string `gorm:"column:dedupe_key" json:"dedupe_key"`
	Summary   string `gorm:"column:summary" json:"summary"`
	// Payload is the JSON body a webhook receives (docs/alerts.md).
	Payload       JSON        `gorm:"column:payload" json:"-"`
	Suppressed    int         `gorm:"column:suppressed" json:"suppressed"`
	Status        AlertStatus `gorm:"column:status" json:"status"`
	Attempts      int         `gorm:"column:attempts" json:"attempts"`
	NextAttemptAt time.Time   `gorm:"column:next_attempt_at" json:"next_attempt_at"`
	LastError     *string     `gorm:"column:last_error" json:"last_error"`
	NodeID        string      `gorm:"column:node_id" json:"node_id"`
	// ResolvedAt is set on a firing alert once its condition cleared and
	// the resolved alert was recorded.
	ResolvedAt *time.Time `gorm:"column:resolved_at" json:"resolved_at"`
	CreatedAt  time.Time  `gorm:"column:created_at" json:"created_at"`
	SentAt     *time.Time `gorm:"column:sent_at" json:"sent_at"`
	UpdatedAt  time.Time  `gorm:"column:updated_at" json:"updated_at"`

	// Invalid is no column: why the row cannot be sent as it is.
	Invalid string `gorm:"-" json:"invalid,omitempty"`
}

// TableName implements gorm's tabler.
func (Alert) TableName() string { return "alerts" }

// Bounds of a lease_flapping rule's params.
const (
	MaxLeaseChanges      = 1000
	MinFlapWindowSeconds = 60
	MaxFlapWindowSeconds = 7 * 24 * 3600
	DefaultFlappingLease = "scheduler"
	maintenanceLeaseName = "maintenance"
)

// checkFlapping checks a lease_flapping rule's params and sets the
// lease's default.
func (p *AlertParams) checkFlapping(scope AlertScope) []error {
	var errs []error
	if scope != ScopeAll {
		errs = append(errs, errors.New("scope: a lease_flapping rule is about the cluster (scope all)"))
	}
	if p.MaxChanges < 1 || p.MaxChanges > MaxLeaseChanges {
		errs = append(errs, fmt.Errorf("params.max_changes: %d is not within 1-%d (the alert fires at one change more)", p.MaxChanges, MaxLeaseChanges))
	}
	if p.WithinSeconds < MinFlapWindowSeconds || p.WithinSeconds > MaxFlapWindowSeconds {
		errs = append(errs, fmt.Errorf("params.within_seconds: %d is not within %d-%d", p.WithinSeconds, MinFlapWindowSeconds, MaxFlapWindowSeconds))
	}
	switch p.Lease {
	case "":
		p.Lease = DefaultFlappingLease
	case DefaultFlappingLease, maintenanceLeaseName:
	default:
		errs = append(errs, fmt.Errorf("params.lease: %q is not scheduler or maintenance", p.Lease))
	}
	return errs
}
