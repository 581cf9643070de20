package validate

import (
	"encoding/json"
	"errors"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// DefinitionRequest is the writable part of a job_definitions row, as the
// API's JSON carries it. Numbers are int64 so that a value beyond the
// column's INT is refused, not wrapped.
type DefinitionRequest struct {
	Name                string          `json:"name"`
	TaskType            string          `json:"task_type"`
	Description         string          `json:"description"`
	DefaultParams       json.RawMessage `json:"default_params"`
	TimeoutSeconds      int64           `json:"timeout_seconds"`
	MaxAttempts         int64           `json:"max_attempts"`
	RetryBackoffSeconds int64           `json:"retry_backoff_seconds"`
	NotifyOn            models.NotifyOn `json:"notify_on"`
	NotifyEmails        string          `json:"notify_emails"`
	RequestsRecovery    bool            `json:"requests_recovery"`
	Priority            int64           `json:"priority"`
	// Queue names the queue whose limits the jobs take; MaxRunning bounds
	// the definition's active jobs (null: no limit). See models.Queue.
	Queue      string `json:"queue"`
	MaxRunning *int64 `json:"max_running"`
	// RequiredTags are the node tags the jobs need, comma-separated
	// (models.ParseTags); "" is any node. Stored sorted.
	RequiredTags string `json:"required_tags"`
	// Broadcast runs each job once on every live node with the tags.
	Broadcast bool `json:"broadcast"`
	// RateLimit and RatePeriodMs: at most RateLimit starts per
	// RatePeriodMs, cluster-wide (both null: none); see models.CheckRate.
	RateLimit    *int64 `json:"rate_limit"`
	RatePeriodMs *int64 `json:"rate_period_ms"`
}

// NewDefinitionRequest holds the column defaults a create starts from.
func NewDefinitionRequest() *DefinitionRequest {
	return &DefinitionRequest{MaxAttempts: 1, RetryBackoffSeconds: 10, NotifyOn: models.NotifyNever, RequestsRecovery: true,
		Priority: models.PriorityDefault, Queue: models.DefaultQueue}
}

// DefinitionRequestOf is d as a request: what an update starts from.
func DefinitionRequestOf(d *models.JobDefinition) *DefinitionRequest {
	return &DefinitionRequest{
		Name: d.Name, TaskType: d.TaskType, Description: d.Description, DefaultParams: json.RawMessage(d.DefaultParams),
		TimeoutSeconds: int64(d.TimeoutSeconds), MaxAttempts: int64(d.MaxAttempts), RetryBackoffSeconds: int64(d.RetryBackoffSeconds),
		NotifyOn: d.NotifyOn, NotifyEmails: d.NotifyEmails, RequestsRecovery: d.RequestsRecovery, Priority: int64(d.Priority),
		Queue: d.Queue, MaxRunning: d.MaxRunning, RequiredTags: d.RequiredTags, Broadcast: d.Broadcast,
		RateLimit: d.RateLimit, RatePeriodMs: d.RatePeriodMs,
	}
}

// Definition checks d as a create request carrying it is checked (Text
// included), against the task types of reg, and returns the row to store.
func Definition(reg *tasks.Registry, d *models.JobDefinition) (*models.JobDefinition, error) {
	if reg == nil {
		return nil, errors.New("validate: Definition needs a registry")
	}
	req := DefinitionRequestOf(d)
	if err := Text(req); err != nil {
		return nil, err
	}
	return req.Validate(reg)
}

// Validate turns the request into a row, or says what is wrong, against
// the task types of reg. It does not run Text: the API's decoder does.
func (req *DefinitionRequest) Validate(reg *tasks.Registry) (*models.JobDefinition, error) {
	d, e := req.validate(reg)
	return d, asError(e)
}

func (req *DefinitionRequest) validate(reg *tasks.Registry) (*models.JobDefinition, *Error) {
	if e := checkName(req.Name); e != nil {
		return nil, e
	}
	if strings.TrimSpace(req.TaskType) == "" {
		return nil, errorf("task_type", "task_type is required (registered: %s)", strings.Join(reg.Kinds(), ", "))
	}
	if _, err := reg.New(req.TaskType); err != nil {
		return nil, errorf("task_type", "unknown task_type %q: this node registers %s", req.TaskType, strings.Join(reg.Kinds(), ", "))
	}
	if utf8.RuneCountInString(req.Description) > MaxDescription {
		return nil, errorf("description", "description is longer than %d characters", MaxDescription)
	}
	for _, c := range []struct {
		field      string
		v, minimum int64
	}{{"timeout_seconds", req.TimeoutSeconds, 0}, {"max_attempts", req.MaxAttempts, 1}, {"retry_backoff_seconds", req.RetryBackoffSeconds, 0}} {
		if e := checkInt32(c.field, c.v, c.minimum); e != nil {
			return nil, e
		}
	}
	switch req.NotifyOn {
	case models.NotifyNever, models.NotifyFailure, models.NotifySuccess, models.NotifyAlways:
	default:
		return nil, errorf("notify_on", "unknown notify_on %q (want never, failure, success or always)", req.NotifyOn)
	}
	if e := checkPriority(req.Priority); e != nil {
		return nil, e
	}
	if req.Queue == "" {
		req.Queue = models.DefaultQueue
	}
	if e := CheckQueueName("queue", req.Queue); e != nil {
		return nil, e
	}
	if r := models.CheckMaxRunning(req.MaxRunning); r != "" {
		return nil, errorf("max_running", "%s", r)
	}
	if r := models.CheckRate(req.RateLimit, req.RatePeriodMs); r != "" {
		return nil, errorf("rate_limit", "%s", r)
	}
	tags, err := models.NormalizeTags(req.RequiredTags)
	if err != nil {
		return nil, errorf("required_tags", "required_tags: %v", err)
	}
	if utf8.RuneCountInString(req.NotifyEmails) > MaxEmails {
		return nil, errorf("notify_emails", "notify_emails is longer than %d characters", MaxEmails)
	}
	var emails []string
	for _, e := range strings.Split(req.NotifyEmails, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if a, err := mail.ParseAddress(e); err != nil || a.Name != "" {
			return nil, errorf("notify_emails", "notify_emails: %q is not an email address (want a comma-separated list like ops@example.com)", e)
		}
		emails = append(emails, e)
	}
	params, e := checkObject("default_params", req.DefaultParams)
	if e != nil {
		return nil, e
	}
	// A definition must be runnable on its own (an ad hoc run without
	// params uses exactly these), so its defaults must satisfy the task.
	if e := checkTaskParams(reg, req.TaskType, "default_params", params); e != nil {
		return nil, e
	}
	return &models.JobDefinition{
		Name: req.Name, TaskType: req.TaskType, Description: req.Description, DefaultParams: params,
		TimeoutSeconds: int(req.TimeoutSeconds), MaxAttempts: int(req.MaxAttempts), RetryBackoffSeconds: int(req.RetryBackoffSeconds),
		NotifyOn: req.NotifyOn, NotifyEmails: strings.Join(emails, ","), RequestsRecovery: req.RequestsRecovery,
		Priority: int(req.Priority), Queue: req.Queue, MaxRunning: req.MaxRunning, RequiredTags: tags, Broadcast: req.Broadcast,
		RateLimit: req.RateLimit, RatePeriodMs: req.RatePeriodMs,
	}, nil
}

// CheckQueueName says what is wrong with a queue's name: 1 to
// models.MaxQueueNameLen bytes of letters, digits and . _ - (a name
// appears in metrics' labels, URLs and the console).
func CheckQueueName(field, name string) *Error {
	if name == "" || len(name) > models.MaxQueueNameLen {
		return errorf(field, "%s must be 1 to %d characters", field, models.MaxQueueNameLen)
	}
	for _, r := range name {
		if !queueNameRune(r) {
			return errorf(field, "%s %q may hold only letters, digits, '.', '_' and '-'", field, name)
		}
	}
	return nil
}

// queueNameRune says whether a queue's name may hold r.
func queueNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}
