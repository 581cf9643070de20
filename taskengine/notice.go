package taskengine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// handoff is every job's tasks.Notifier. A task hands its completion notice
// off through it (tasks.Base.OnComplete does, when notify_on wants one); the
// engine then records the notice in the outbox in the same transaction as
// the outcome, and a sender mails it once the job's log is written. A
// task that overrides OnComplete without handing off drops the email, as
// it always could; a second hand-off of one run is the same notice.
type handoff struct{ asked atomic.Bool }

func (h *handoff) Notify(_ context.Context, _ *tasks.Job, r tasks.Result) error {
	if !r.Retrying {
		h.asked.Store(true)
	}
	return nil
}

// outcomeNotice is the notice to record with job's final outcome: when its
// task handed one off (handedOff) or, for a job that never reached
// OnComplete, when notify_on asks for status. nil when none is due.
func outcomeNotice(job *tasks.Job, status models.JobStatus, attempt int, handedOff bool) *chimedb.OutcomeNotice {
	if !handedOff && !job.Notify.Wants(string(status)) {
		return nil
	}
	if len(job.Notify.Emails) == 0 {
		job.Log().Warn("notify: the definition asks for email but lists no notify_emails")
		return nil
	}
	n := &chimedb.OutcomeNotice{Attempt: attempt, Recipients: strings.Join(job.Notify.Emails, ",")}
	size := 0
	for _, a := range job.Attachments() {
		size += len(a.Data)
		n.Attachments = append(n.Attachments, models.NotificationAttachment{Name: a.Name, ContentType: a.ContentType, Data: a.Data})
	}
	if size > chimedb.MaxNoticeAttachmentBytes {
		job.Log().Warn(fmt.Sprintf("notify: attachments of %d bytes exceed the %d the outbox keeps; the email goes without them",
			size, chimedb.MaxNoticeAttachmentBytes))
		n.Attachments = nil
	}
	return n
}

func handedOff(job *tasks.Job) bool {
	h, ok := job.Notifier.(*handoff)
	return ok && h.asked.Load()
}
