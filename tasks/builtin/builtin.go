// Package builtin registers chime's built-in tasks (sleep, shell,
// httpcall, email) into a tasks.Registry.
//
// Registration is explicit — builtin has no init — because the email task
// needs a Sender that exists only once the configuration is loaded, and a
// kind cannot be registered twice. cmd/ wires it as:
//
//	mailer, err := notify.New(st, &notify.Config{Host: cfg.SMTP.Host, ...})
//	...
//	err = builtin.Register(tasks.Default(), builtin.WithSender(mailer))
//
// Without WithSender the email task is still registered (so definitions
// using it validate) but every run fails with "email: smtp not configured".
//
// builtin imports tasks and its sub-packages only.
package builtin

import (
	"fmt"
	"slices"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/email"
	"github.com/chimesched/chime/tasks/httpcall"
	"github.com/chimesched/chime/tasks/shell"
	"github.com/chimesched/chime/tasks/sleep"
)

// Option configures Register.
type Option func(*options)

type options struct{ sender email.Sender }

// WithSender gives the email task its Sender (a *notify.Mailer).
func WithSender(s email.Sender) Option { return func(o *options) { o.sender = s } }

// Kinds are the kinds Register adds, sorted.
var Kinds = []string{email.Kind, httpcall.Kind, shell.Kind, sleep.Kind}

// Register adds every built-in task to r. It fails, registering nothing,
// if any of the kinds is taken.
func Register(r *tasks.Registry, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, k := range r.Kinds() {
		if slices.Contains(Kinds, k) {
			return fmt.Errorf("builtin: kind %q already registered", k)
		}
	}
	for _, k := range []struct {
		kind string
		f    tasks.Factory
	}{
		{sleep.Kind, sleep.New},
		{shell.Kind, shell.New},
		{httpcall.Kind, httpcall.New},
		{email.Kind, email.Factory(o.sender)},
	} {
		if err := r.Register(k.kind, k.f); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	return nil
}
