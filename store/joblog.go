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
