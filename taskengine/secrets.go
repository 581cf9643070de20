package taskengine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/tasks"
)

// fieldMask carries a job's *secrets.Masker on its log entries, for
// jobLogHook; it is never written anywhere.
const fieldMask = "chime_secret_mask"

// secretRefError is a job whose params refer to a secret it cannot have:
// missing, not decryptable here, or malformed. No retry can do better
// until an admin acts, so the job fails at once.
type secretRefError struct{ err error }

func (e *secretRefError) Error() string {
	return fmt.Sprintf("secrets: %v; not retried: no attempt can succeed until the secret is set (or a key configured)", e.err)
}
func (e *secretRefError) Unwrap() error { return e.err }

// resolveSecrets replaces the secret references of job.Params with their
// values, on this worker and only in memory: jobs.params keeps the
// references. It hangs a masker of the values on the job's logger. A
// reference that cannot be resolved is a SkipRetry error; a database
// error is an ordinary failed attempt.
func (x *executor) resolveSecrets(ctx context.Context, job *tasks.Job) (*secrets.Masker, error) {
	if !secrets.HasRefs(job.Params) {
		return nil, nil
	}
	var transient error
	lookup := func(name string) (string, error) {
		if x.cfg.Secrets == nil {
			return "", secrets.ErrNoKey
		}
		v, err := x.cfg.Secrets.Secret(ctx, name)
		if err != nil && !secrets.IsPermanent(err) {
			transient = err
		}
		return v, err
	}
	out, values, err := secrets.Resolve(job.Params, lookup)
	switch {
	case err != nil && !json.Valid(job.Params):
		// Not JSON (a row written by SQL): the task's own decoding says so.
		return nil, nil
	case transient != nil:
		metrics.SecretResolutions.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("secrets: reading a secret: %w", transient)
	case err != nil:
		metrics.SecretResolutions.WithLabelValues("refused").Inc()
		return nil, tasks.SkipRetry(&secretRefError{err: err})
	}
	if len(values) == 0 {
		return nil, nil // an escape, no reference
	}
	metrics.SecretResolutions.WithLabelValues("ok").Inc()
	job.Params, job.SecretParams = json.RawMessage(out), true
	m := secrets.NewMasker(values)
	if m != nil && job.Logger != nil {
		job.Logger = job.Logger.WithField(fieldMask, m)
	}
	return m, nil
}

// maskedError shows err with the job's secret values masked, and is err
// to errors.Is and errors.As, so the verdict is the same.
type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func maskError(m *secrets.Masker, err error) error {
	if m == nil || err == nil {
		return err
	}
	msg := m.Mask(err.Error())
	if msg == err.Error() {
		return err
	}
	return &maskedError{err: err, msg: msg}
}

// maskEntry masks the message and the text fields of a job's log line
// and drops the masker from its fields; e is logrus's copy of the entry.
func maskEntry(e *logrus.Entry) {
	m, ok := e.Data[fieldMask].(*secrets.Masker)
	if !ok {
		return
	}
	data := maps.Clone(e.Data)
	delete(data, fieldMask)
	for k, v := range data {
		switch t := v.(type) {
		case string:
			data[k] = m.Mask(t)
		case error:
			data[k] = m.Mask(t.Error())
		case fmt.Stringer:
			data[k] = m.Mask(t.String())
		case []byte:
			data[k] = m.Mask(string(t))
		}
	}
	e.Data = data
	e.Message = m.Mask(e.Message)
}
