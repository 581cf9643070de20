package store

import (
	"context"
	"fmt"
	"net/mail"
	"strings"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// maxRunNotifyEmails bounds workflows.notify_emails, as the definitions'.
const maxRunNotifyEmails = 2048

// checkRunNotify checks a spec's notify_on and notify_emails as the
// definitions' are checked, and returns them normalised.
func checkRunNotify(spec *chimedb.WorkflowSpec) (models.NotifyOn, string, error) {
	on := spec.NotifyOn
	switch on {
	case "":
		on = models.NotifyNever
	case models.NotifyNever, models.NotifyFailure, models.NotifySuccess, models.NotifyAlways:
	default:
		return "", "", fmt.Errorf("unknown notify_on %q (want never, failure, success or always): %w", on, chimedb.ErrInvalid)
	}
	if len(spec.NotifyEmails) > maxRunNotifyEmails {
		return "", "", fmt.Errorf("notify_emails is longer than %d bytes: %w", maxRunNotifyEmails, chimedb.ErrInvalid)
	}
	var emails []string
	for _, e := range strings.Split(spec.NotifyEmails, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if a, err := mail.ParseAddress(e); err != nil || a.Name != "" {
			return "", "", fmt.Errorf("notify_emails: %q is not an email address (want a comma-separated list like ops@example.com): %w", e, chimedb.ErrInvalid)
		}
		emails = append(emails, e)
	}
	return on, strings.Join(emails, ","), nil
}

// runNotifyWantsSQL is workflows.notify_on asking for a notice of the
// run's status, over the aliases w and r; a canceled run counts as a
// failure, as a canceled job does.
const runNotifyWantsSQL = `(w.notify_on = 'always' OR (w.notify_on = 'success' AND r.status = 'succeeded')
	OR (w.notify_on = 'failure' AND r.status IN ('failed', 'canceled')))`

// runNotifyWants is runNotifyWantsSQL, with the emails' test of
// enqueueRunNotice, for a workflow row already read: whether a run of wf
// that ends as status records a notice.
func runNotifyWants(wf *models.Workflow, status models.RunStatus) bool {
	if wf.NotifyEmails == "" {
		return false
	}
	switch wf.NotifyOn {
	case models.NotifyAlways:
		return true
	case models.NotifySuccess:
		return status == models.RunSucceeded
	case models.NotifyFailure:
		return status == models.RunFailed || status == models.RunCanceled
	}
	return false
}

// enqueueRunNotice records, inside the transaction that ended run id, the
// notice its workflow asks for: one statement, which writes nothing when
// the workflow wants none. The notice's job_id is the run's id negated,
// so that the outbox's unique key (job_id, job_status, attempt) keeps
// one notice per run, status and generation (a rerun that fails again is
// emailed again).
func (s *Store) enqueueRunNotice(tx *gorm.DB, id int64) error {
	err := tx.Exec(`INSERT INTO notifications (job_id, job_status, attempt, recipients, run_id)
		SELECT -r.id, r.status, r.generation, w.notify_emails, r.id FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id
		WHERE r.id = ? AND w.notify_emails <> '' AND `+runNotifyWantsSQL+s.insertIgnoreDup(), id).Error
	if err != nil {
		return fmt.Errorf("record the notice of run %d: %w", id, err)
	}
	return nil
}

// runDelivery fills d, a run's claimed notice, with the run as it is now
// and its steps; a run that is gone leaves d.Run nil (the sender fails
// the notice for good).
func (s *Store) runDelivery(ctx context.Context, d *models.NotificationDelivery) error {
	v, err := s.GetRun(ctx, *d.RunID)
	if err != nil {
		if strings.Contains(err.Error(), chimedb.ErrNotFound.Error()) {
			return nil
		}
		return fmt.Errorf("read the run of notice %d: %w", d.ID, err)
	}
	run := v.Run
	d.Run, d.WorkflowName = &run, v.Workflow.Name
	for _, st := range v.Steps {
		l := models.RunStepLine{Name: st.Step.Name, State: st.State}
		if st.Job != nil {
			l.JobID = st.Job.ID
			if st.Job.Error != nil {
				l.Error = *st.Job.Error
			}
		}
		d.RunSteps = append(d.RunSteps, l)
	}
	if run.ScheduleID != nil {
		var ss []models.Schedule
		if err := s.db.WithContext(ctx).Select("id, name").Where("id = ?", *run.ScheduleID).Find(&ss).Error; err != nil {
			return fmt.Errorf("read the schedule of run %d: %w", run.ID, err)
		}
		if len(ss) > 0 {
			d.ScheduleName = ss[0].Name
		}
	}
	return nil
}
