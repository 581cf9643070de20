// Package notify sends email: the completion notices of jobs, and messages
// for tasks that mail (tasks/email, plugins attaching a report).
//
// A Mailer is built on github.com/wneessen/go-mail. Send and SendMessage
// deliver synchronously.
//
// The completion notices of chime's jobs go through the outbox: the store
// records a notifications row with the job's final state, and a Sender on
// every node with SMTP claims due rows, renders each (message.go) from the
// job's row and log as they are at send time, and retries with backoff
// across restarts; see Sender.
//
// Notify implements tasks.Notifier for code that runs tasks without the
// engine (tests, tools): it only enqueues onto a bounded in-memory queue
// served by a few worker goroutines, so OnComplete never waits on an SMTP
// server. A failed delivery is
// retried with backoff (a permanent 5xx reply is not); a notice that is
// finally lost — or dropped because the queue is full — is logged with its
// job_id, written to the job's own log, counted by Failures and passed to
// Config.OnFailure. Close drains the queue.
//
// Usage:
//
//	m, err := notify.New(store, &notify.Config{Host: "smtp.example.com", From: "chime@example.com"})
//	...
//	job.Notifier = m // the engine, for each job
//	...
//	err = m.Close(ctx) // on shutdown, after the task engine has stopped
//
// notify imports tasks (for Job, Result and the Notifier contract), models
// (the outbox rows), logrus and go-mail; never the store or an engine — the
// outbox and the job log tail come in through OutboxStore and LogTailer.
package notify
