package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// Message is one email.
type Message struct {
	To          []string
	Subject     string
	Text        string // plain-text body
	HTML        string // optional HTML alternative
	Attachments []Attachment
}

// Attachment is a file sent with a Message. It is the same type tasks use
// with Job.Attach, so a plugin's report reaches the completion email as is.
type Attachment = tasks.Attachment

// LogTailer returns the last n log lines of a job, oldest first; the store
// implements it over job_logs.
type LogTailer interface {
	TailLogs(ctx context.Context, jobID int64, n int) ([]string, error)
}

// resultExcerptBytes bounds the result shown in a notice; the end of an
// output is where the interesting part usually is.
const resultExcerptBytes = 4 << 10

// notice is what Notify snapshots from a job: the engine may reuse or
// change the Job after OnComplete returns, and the worker runs later.
type notice struct {
	job            *tasks.Job // for Log() only
	id, scheduleID int64
	definition     string
	schedule       string
	taskType       string
	node           string
	scheduledAt    time.Time
	attempt, max   int
	to             []string
	result         tasks.Result
	attachments    []tasks.Attachment
}

func newNotice(job *tasks.Job, r tasks.Result) notice {
	return notice{
		job:         job,
		id:          job.ID,
		scheduleID:  job.ScheduleID,
		definition:  job.DefinitionName,
		schedule:    job.ScheduleName,
		taskType:    job.TaskType,
		node:        job.NodeID,
		scheduledAt: job.ScheduledAt,
		attempt:     job.Attempt,
		max:         job.MaxAttempts,
		to:          append([]string(nil), job.Notify.Emails...),
		result:      r,
		attachments: job.Attachments(),
	}
}

func (n notice) name() string {
	switch {
	case n.definition != "":
		return n.definition
	case n.taskType != "":
		return n.taskType
	}
	return fmt.Sprintf("job %d", n.id)
}

// subject reads e.g. "[chime] nightly-report succeeded (schedule nightly)".
func (n notice) subject(prefix string) string {
	where := "ad hoc, job " + fmt.Sprint(n.id)
	if n.scheduleID != 0 || n.schedule != "" {
		where = "schedule " + n.schedule
		if n.schedule == "" {
			where = fmt.Sprintf("schedule %d", n.scheduleID)
		}
	}
	s := fmt.Sprintf("%s %s (%s)", n.name(), n.result.Status, where)
	if prefix != "" {
		s = prefix + " " + s
	}
	return s
}

func (n notice) text(logTail []string, logErr error) string {
	var b strings.Builder
	r := n.result
	fmt.Fprintf(&b, "%s %s.\n\n", n.name(), r.Status)

	row := func(k, v string) { fmt.Fprintf(&b, "%-11s %s\n", k+":", v) }
	row("Job", fmt.Sprint(n.id))
	if n.scheduleID != 0 || n.schedule != "" {
		row("Schedule", fmt.Sprintf("%s (id %d)", n.schedule, n.scheduleID))
	} else {
		row("Schedule", "none (ad hoc run)")
	}
	if n.taskType != "" {
		row("Task type", n.taskType)
	}
	row("Attempt", fmt.Sprintf("%d of %d", n.attempt, n.max))
	if n.node != "" {
		row("Node", n.node)
	}
	row("Scheduled", formatTime(n.scheduledAt))
	row("Started", formatTime(r.StartedAt))
	row("Finished", formatTime(r.FinishedAt))
	if d := r.Duration(); d > 0 {
		row("Duration", d.Round(time.Millisecond).String())
	}

	if r.Err != nil {
		fmt.Fprintf(&b, "\nError:\n%s\n", indent(r.Err.Error()))
	}
	if r.Output != "" {
		out := r.Output
		if len(out) > resultExcerptBytes {
			out = fmt.Sprintf("[... %d bytes cut ...]\n", len(out)-resultExcerptBytes) +
				strings.ToValidUTF8(out[len(out)-resultExcerptBytes:], "")
		}
		fmt.Fprintf(&b, "\nResult:\n%s\n", indent(out))
	}
	switch {
	case logErr != nil:
		fmt.Fprintf(&b, "\nLog: unavailable (%v)\n", logErr)
	case len(logTail) > 0:
		fmt.Fprintf(&b, "\nLast %d log lines:\n%s\n", len(logTail), indent(strings.Join(logTail, "\n")))
	}
	if len(n.attachments) > 0 {
		names := make([]string, len(n.attachments))
		for i, a := range n.attachments {
			names[i] = a.Name
		}
		fmt.Fprintf(&b, "\nAttached: %s\n", strings.Join(names, ", "))
	}
	return b.String()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// runSubject reads e.g. "[chime] workflow nightly-etl run 12 failed
// (schedule nightly)". The status is the notice's: the run's when it ended.
func runSubject(d *models.NotificationDelivery, prefix string) string {
	where := "started by " + d.Run.StartedBy
	if d.Run.StartedBy == "" {
		where = "ad hoc"
	}
	if d.ScheduleName != "" {
		where = "schedule " + d.ScheduleName
	}
	s := fmt.Sprintf("workflow %s run %d %s (%s)", d.WorkflowName, d.Run.ID, d.JobStatus, where)
	if prefix != "" {
		s = prefix + " " + s
	}
	return s
}

// runText is a run notice's body: the run, then a line per step.
func runText(d *models.NotificationDelivery) string {
	var b strings.Builder
	r := d.Run
	fmt.Fprintf(&b, "Workflow %s, run %d, %s.\n\n", d.WorkflowName, r.ID, d.JobStatus)
	row := func(k, v string) { fmt.Fprintf(&b, "%-11s %s\n", k+":", v) }
	row("Run", fmt.Sprint(r.ID))
	row("Generation", fmt.Sprint(d.Attempt))
	if d.ScheduleName != "" {
		row("Schedule", d.ScheduleName)
	}
	if r.StartedBy != "" {
		row("Started by", r.StartedBy)
	}
	if r.StartedAt != nil {
		row("Started", formatTime(*r.StartedAt))
	}
	if r.FinishedAt != nil {
		row("Finished", formatTime(*r.FinishedAt))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "\nReason:\n%s\n", indent(r.Reason))
	}
	if len(d.RunSteps) > 0 {
		b.WriteString("\nSteps:\n")
		for _, st := range d.RunSteps {
			job := "-"
			if st.JobID != 0 {
				job = "job " + fmt.Sprint(st.JobID)
			}
			fmt.Fprintf(&b, "  %-24s %-10s %s\n", st.Name, st.State, job)
			if st.Error != "" {
				e := st.Error
				if len(e) > resultExcerptBytes {
					e = strings.ToValidUTF8(e[:resultExcerptBytes], "") + " [...]"
				}
				fmt.Fprintf(&b, "%s\n", indent(indent(e)))
			}
		}
	}
	return b.String()
}
