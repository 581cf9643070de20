// Package notify sends email: the completion notices of jobs, and messages
// for tasks that mail (tasks/email, plugins attaching a report).
//
// A Mailer is built on github.com/wneessen/go-mail. Send and SendMessage
// deliver synchronously. Notify implements tasks.Notifier asynchronously: it
// only enqueues onto a bounded queue served by a few worker goroutines, so
// a job's OnComplete never waits on an SMTP server. A failed delivery is
// retried with backoff (a permanent 5xx reply is not); a notice that is
// finally lost — or dropped because the queue is full — is logged with its
// job_id, written to the job's own log, counted by Failures and passed to
// Options.OnFailure. Close drains the queue.
//
// Usage:
//
//	m, err := notify.New(notify.Config{Host: "smtp.example.com", From: "chime@example.com"}, &notify.Options{LogTailer: store})
//	...
//	job.Notifier = m // the engine, for each job
//	...
//	err = m.Close(ctx) // on shutdown, after the task engine has stopped
//
// notify imports tasks (for Job, Result and the Notifier contract), logrus
// and go-mail; never the store or an engine — the job log tail comes in
// through the LogTailer interface.
package notify
