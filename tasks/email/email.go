// Package email is the built-in "email" task: it sends one plain-text
// message. It imports only tasks; the SMTP side comes in as a Sender
// (notify.Mailer is one), given to the constructor rather than found in
// global state.
//
// Params:
//
//	"to": ["ops@example.com"]   required
//	"subject": "..."            default "[chime] <definition name>"
//	"body": "..."
//
// Pause holds the task only before the message goes out; while it is being
// sent Pause refuses. Stop cancels the send.
package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/chimesched/chime/tasks"
)

// Kind is the task_type of this task.
const Kind = "email"

// Sender delivers one message synchronously.
type Sender interface {
	Send(ctx context.Context, to []string, subject, body string) error
}

// ErrNotConfigured fails a job when no Sender was configured.
var ErrNotConfigured = errors.New("email: smtp not configured")

// Params are the task's params.
type Params struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Body    string   `json:"body"`
}

func parse(raw json.RawMessage) (Params, error) {
	var p Params
	if err := tasks.DecodeParams(raw, &p); err != nil {
		return p, err
	}
	if len(p.To) == 0 {
		return p, tasks.FieldError("to", "at least one recipient is required")
	}
	for _, addr := range p.To {
		if _, err := mail.ParseAddress(addr); err != nil {
			return p, tasks.FieldError("to", "%q is not an email address", addr)
		}
	}
	return p, nil
}

// Task sends one email.
type Task struct {
	tasks.Base
	sender Sender
}

// refusal is what Pause logs once the message is being sent (or Execute is
// over): an SMTP exchange cannot be held midway, and a job shown as paused
// must really be held.
const refusal = "email: cannot pause: the message is already being sent (stop cancels it)"

// New returns an email task with no Sender: it validates params but fails
// every run with ErrNotConfigured. Use Factory to wire a Sender.
func New() tasks.Task { return &Task{} }

// NewWithSender returns an email task sending through s (nil: unconfigured).
func NewWithSender(s Sender) tasks.Task { return &Task{sender: s} }

// QueueFree implements tasks.QueueFree: OnQueue is Base's, which does
// nothing, so the engine may claim the job straight into running.
func (*Task) QueueFree() {}

// Factory returns a factory for tasks sending through s.
func Factory(s Sender) tasks.Factory {
	return func() tasks.Task { return NewWithSender(s) }
}

// Validate implements tasks.Validator.
func (*Task) Validate(params json.RawMessage) error {
	if _, err := parse(params); err != nil {
		return fmt.Errorf("email: %w", err)
	}
	return nil
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, job *tasks.Job) error {
	defer t.RefusePauses(refusal)
	p, err := parse(job.Params)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	if t.sender == nil {
		return ErrNotConfigured
	}
	if err := t.BeginUnpausable(ctx, job, refusal); err != nil {
		return fmt.Errorf("email: %w", tasks.ContextError(ctx))
	}
	subject := p.Subject
	if subject == "" {
		subject = "[chime] " + job.DefinitionName
		if job.DefinitionName == "" {
			subject = fmt.Sprintf("[chime] job %d", job.ID)
		}
	}
	if err := t.sender.Send(ctx, p.To, subject, p.Body); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("email: %w: %w", tasks.ContextError(ctx), err)
		}
		return fmt.Errorf("email: %w", err)
	}
	to := strings.Join(p.To, ", ")
	job.SetResult("sent to " + to)
	job.Log().Infof("email: sent %q to %s", subject, to)
	return nil
}
