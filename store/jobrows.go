package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// The jobs and notices the engines take (the claim, recovery, the
// reconciler, the outbox's claim) are read here, so that one row an admin
// wrote by plain SQL cannot stop the others. Before, a value no Go field
// holds (SQLite's text in an INTEGER column, PostgreSQL's 'infinity')
// failed the read of every row with it, and a counter at the largest INT
// failed the increment of every row with it: the claim that picked such a
// job failed again at every poll, and the node ran nothing. Now such a row
// is badRow: the read goes on with the others, and the caller fails it,
// with the reason, in the same transaction. docs/security.md has the
// rules.

// badRow is a row that cannot be run: unreadable, or a value out of its
// models.Bound.
type badRow struct {
	id     int64
	reason string
	// claimKey is the jobs row's claim_key, where a claim's scan ended.
	claimKey int64
}

// jobField is the field of j that column col of jobs scans into; a column
// models.Job has not (a join's) goes nowhere. TestJobFieldsCoverModel
// fails when the model gains a column this lacks.
func jobField(j *models.Job, col string) any {
	switch col {
	case "id":
		return &j.ID
	case "schedule_id":
		return &j.ScheduleID
	case "job_definition_id":
		return &j.JobDefinitionID
	case "scheduled_at":
		return &j.ScheduledAt
	case "run_at":
		return &j.RunAt
	case "status":
		return &j.Status
	case "control":
		return &j.Control
	case "attempt":
		return &j.Attempt
	case "max_attempts":
		return &j.MaxAttempts
	case "recoveries":
		return &j.Recoveries
	case "outcome":
		return &j.Outcome
	case "snoozes":
		return &j.Snoozes
	case "priority":
		return nullZero[int]{&j.Priority}
	case "claim_key":
		return nullZero[int64]{&j.ClaimKey}
	case "params":
		return &j.Params
	case "queue":
		return &j.Queue
	case "required_tags":
		return &j.RequiredTags
	case "shard_index":
		return &j.ShardIndex
	case "shard_total":
		return &j.ShardTotal
	case "shard_group":
		return &j.ShardGroup
	case "target_node":
		return &j.TargetNode
	case "catch_up":
		return &j.CatchUp
	case "missed_fires":
		return &j.MissedFires
	case "node_id":
		return &j.NodeID
	case "queued_at":
		return &j.QueuedAt
	case "started_at":
		return &j.StartedAt
	case "finished_at":
		return &j.FinishedAt
	case "heartbeat_at":
		return &j.HeartbeatAt
	case "result":
		return &j.Result
	case "error":
		return &j.Error
	case "created_at":
		return &j.CreatedAt
	case "updated_at":
		return &j.UpdatedAt
	case "run_id":
		return &j.RunID
	case "step_id":
		return &j.StepID
	case "run_inputs":
		return &j.RunInputs
	}
	return new(any)
}

// nullZero scans NULL as the zero value, as gorm does, into a field that
// is no pointer: jobs.priority and claim_key may be NULL on MariaDB and
// SQLite (a trigger fills them in), and such a row is not unreadable.
type nullZero[T any] struct{ p *T }

func (z nullZero[T]) fieldPtr() any { return z.p }

func (z nullZero[T]) Scan(src any) error {
	var n sql.Null[T]
	if err := n.Scan(src); err != nil {
		return err
	}
	*z.p = n.V
	return nil
}

// noticeField is jobField for notifications.
func noticeField(n *models.Notification, col string) any {
	switch col {
	case "id":
		return &n.ID
	case "job_id":
		return &n.JobID
	case "run_id":
		return &n.RunID
	case "job_status":
		return &n.JobStatus
	case "attempt":
		return &n.Attempt
	case "recipients":
		return &n.Recipients
	case "attachments":
		return &n.Attachments
	case "status":
		return &n.Status
	case "attempts":
		return &n.Attempts
	case "next_attempt_at":
		return &n.NextAttemptAt
	case "last_error":
		return &n.LastError
	case "node_id":
		return &n.NodeID
	case "created_at":
		return &n.CreatedAt
	case "sent_at":
		return &n.SentAt
	case "updated_at":
		return &n.UpdatedAt
	}
	return new(any)
}

// readChecked reads every row of rows into a T through field. A row with
// a value its field cannot hold, or that check refuses (nil: none), is not
// returned but in bad, with the reason; its id and claim_key are read from
// the raw values. With show, such a row is returned instead, with every
// value its field cannot hold zero, and show gives it the reason: the
// admin's listings show it beside the others. rows is closed.
func readChecked[T any](rows *sql.Rows, table string, field func(*T, string) any, check func(*T) error,
	show func(*T, string)) (out []T, bad []badRow, err error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	idCol, keyCol := slices.Index(cols, "id"), slices.Index(cols, "claim_key")
	for rows.Next() {
		var v T
		dest := make([]any, len(cols))
		for i, c := range cols {
			dest[i] = field(&v, c)
		}
		at, raw, err := scanEach(rows, dest)
		if err != nil {
			return nil, nil, err
		}
		var reason string
		switch {
		case len(at) > 0:
			why := make([]string, len(at))
			for i, c := range at {
				why[i] = unreadable(table+"."+cols[c], dest[c], raw[c])
			}
			reason = strings.Join(why, "; ")
		case check != nil:
			if err := check(&v); err != nil {
				reason = err.Error()
			}
		}
		switch {
		case reason == "":
			out = append(out, v)
		case show != nil:
			show(&v, reason)
			out = append(out, v)
		default:
			b := badRow{reason: reason}
			if idCol >= 0 {
				b.id = fieldInt64(dest[idCol])
			}
			if keyCol >= 0 {
				b.claimKey = fieldInt64(dest[keyCol])
			}
			bad = append(bad, b)
		}
	}
	return out, bad, rows.Err()
}

// fieldInt64 is the value of an int64 field of a scanned row.
func fieldInt64(dest any) int64 {
	switch p := dest.(type) {
	case *int64:
		return *p
	case nullZero[int64]:
		return *p.p
	}
	return 0
}

// readJobs reads jobs rows; with check, a row whose counters or times are
// out of their bounds (models.Job.CheckBounds) is bad too.
func readJobs(q *gorm.DB, check bool) ([]models.Job, []badRow, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, nil, err
	}
	var c func(*models.Job) error
	if check {
		c = (*models.Job).CheckBounds
	}
	return readChecked(rows, "jobs", jobField, c, nil)
}

// readNotices is readJobs for notifications, always checked. claimed
// says the rows' attempts count their claim, one past what it checked.
func readNotices(q *gorm.DB, claimed bool) ([]models.Notification, []badRow, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, nil, err
	}
	check := (*models.Notification).CheckBounds
	if claimed {
		check = func(n *models.Notification) error {
			c := *n
			c.Attempts--
			return c.CheckBounds()
		}
	}
	return readChecked(rows, "notifications", noticeField, check, nil)
}

// failBadJobs fails, inside tx, the jobs of bad that are still in one of
// from, with their reasons as error and in their logs. It returns the ids
// it failed, whose notices the caller records; it logs them once its
// transaction has committed (logBadJobs).
func (s *Store) failBadJobs(tx *gorm.DB, bad []badRow, now time.Time, from []models.JobStatus) ([]int64, error) {
	var ids []int64
	var logs []models.JobLog
	for _, b := range bad {
		msg := cannotRun(b.reason)
		res := tx.Exec(`UPDATE `+s.jobsByID()+` SET status = ?, control = '', outcome = '', finished_at = ?, error = ? WHERE id = ? AND status IN ?`,
			models.JobFailed, now, msg, b.id, from)
		if res.Error != nil {
			return nil, fmt.Errorf("fail job %d: %w", b.id, res.Error)
		}
		if res.RowsAffected > 0 {
			ids = append(ids, b.id)
			logs = append(logs, models.JobLog{JobID: b.id, Level: "error", Message: "failed: " + msg, CreatedAt: now})
		}
	}
	return ids, s.insertJobLogs(tx, logs)
}

// cannotRun is the error of a job row failed for reason.
func cannotRun(reason string) string {
	return "the row cannot be run as it is (written without the API?): " + reason
}

// badJobs are the rows a transaction met that cannot be run, and the ids
// of those it failed.
type badJobs struct {
	rows   []badRow
	failed []int64
}

// logBadJobs logs, once each, the rows bad failed, by who failed them:
// called once the transaction that failed them has committed.
func (s *Store) logBadJobs(bad badJobs, by string) {
	logged := make(map[int64]bool, len(bad.failed))
	for _, b := range bad.rows {
		if !logged[b.id] && slices.Contains(bad.failed, b.id) {
			logged[b.id] = true
			s.log.WithField("job_id", b.id).WithField("reason", b.reason).Errorf("%s failed a job whose row cannot be run as it is", by)
		}
	}
}

// shownJobs reads jobs for the admin's listings: a row that cannot be run
// as it is comes back with Unreadable set (see showTimes), beside the
// others, where it used to fail the whole listing.
func shownJobs(q *gorm.DB) ([]models.Job, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	out, _, err := readChecked(rows, "jobs", jobField, (*models.Job).CheckBounds, func(j *models.Job, reason string) {
		j.Unreadable = reason
		showTimes([]*time.Time{&j.ScheduledAt, &j.RunAt, &j.CreatedAt, &j.UpdatedAt},
			[]**time.Time{&j.QueuedAt, &j.StartedAt, &j.FinishedAt, &j.HeartbeatAt})
	})
	return out, err
}

// shownNotices is shownJobs for notifications.
func shownNotices(q *gorm.DB) ([]models.Notification, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	out, _, err := readChecked(rows, "notifications", noticeField, (*models.Notification).CheckBounds, func(n *models.Notification, reason string) {
		n.Unreadable = reason
		showTimes([]*time.Time{&n.NextAttemptAt, &n.CreatedAt, &n.UpdatedAt}, []**time.Time{&n.SentAt})
	})
	return out, err
}

// showTimes zeroes (or, when nullable, sets NULL) the times outside
// models.MinTime to MaxTime: JSON cannot encode a year past 9999 or
// before 0, and one such time failed the encoding of a whole listing.
func showTimes(times []*time.Time, nullable []**time.Time) {
	for _, t := range times {
		if models.CheckTime("", *t) != nil {
			*t = time.Time{}
		}
	}
	for _, t := range nullable {
		if *t != nil && models.CheckTime("", **t) != nil {
			*t = nil
		}
	}
}
