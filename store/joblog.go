package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// jobLogsPerInsert bounds one multi-row INSERT: 4 placeholders a row keeps
// it far below both dialects' limits on bound variables.
const jobLogsPerInsert = 500

// InsertJobLogs writes lines to job_logs with multi-row INSERTs, a few
// hundred rows a statement: one round trip serves many jobs' transitions.
// CreatedAt is written as given (through DBTime); a zero one becomes now.
func (s *Store) InsertJobLogs(ctx context.Context, logs []models.JobLog) error {
	if len(logs) == 0 {
		return nil
	}
	if err := insertJobLogs(s.db.WithContext(ctx), logs); err != nil {
		return fmt.Errorf("insert %d job logs: %w", len(logs), err)
	}
	return nil
}

func insertJobLogs(db *gorm.DB, logs []models.JobLog) error {
	now := DBTime(time.Now())
	for start := 0; start < len(logs); start += jobLogsPerInsert {
		chunk := logs[start:min(start+jobLogsPerInsert, len(logs))]
		var b strings.Builder
		b.WriteString("INSERT INTO job_logs (job_id, level, message, created_at) VALUES ")
		args := make([]any, 0, 4*len(chunk))
		for i, l := range chunk {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("(?,?,?,?)")
			at := l.CreatedAt
			if at.IsZero() {
				at = now
			}
			level := l.Level
			if level == "" {
				level = "info"
			}
			args = append(args, l.JobID, level, l.Message, DBTime(at))
		}
		if err := db.Exec(b.String(), args...).Error; err != nil {
			return err
		}
	}
	return nil
}

func logsFor(ids []int64, level, msg string, at time.Time) []models.JobLog {
	out := make([]models.JobLog, len(ids))
	for i, id := range ids {
		out[i] = models.JobLog{JobID: id, Level: level, Message: msg, CreatedAt: at}
	}
	return out
}

// TailLogs returns the last n lines of a job's log, oldest first, formatted
// for a notification body ("15:04:05.000 info  message"). It makes *Store a
// notify.LogTailer.
func (s *Store) TailLogs(ctx context.Context, jobID int64, n int) ([]string, error) {
	var logs []models.JobLog
	if err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("id DESC").Limit(n).Find(&logs).Error; err != nil {
		return nil, fmt.Errorf("tail logs of job %d: %w", jobID, err)
	}
	out := make([]string, 0, len(logs))
	for i := len(logs) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprintf("%s %-5s %s", logs[i].CreatedAt.UTC().Format("15:04:05.000"), logs[i].Level, logs[i].Message))
	}
	return out, nil
}
