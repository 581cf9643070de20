package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// jobLogsPerInsert bounds one multi-row INSERT: 4 placeholders a row keeps
// it far below both dialects' limits on bound variables.
const jobLogsPerInsert = 500

// InsertJobLogs writes lines to job_logs with multi-row INSERTs, a few
// hundred rows a statement: one round trip serves many jobs' transitions.
// CreatedAt is written as given (through DBTime); a zero one becomes now.
//
// Messages and levels are made storable first (see Storable). A batch of
// more than one statement is one transaction, so a caller that retries
// after an error never writes a line twice. When the database refuses a
// statement for anything but a transient reason (see transient), it is
// split until the refused lines are alone: the others are written, and a
// refused line is replaced by a line saying why (or, refused again,
// left out), so one bad line never takes other jobs' lines with it.
func (s *Store) InsertJobLogs(ctx context.Context, logs []models.JobLog) error {
	if len(logs) == 0 {
		return nil
	}
	chunks := logChunks(s.storableLogs(logs))
	if len(chunks) == 1 {
		err := execLogInsert(s.db.WithContext(ctx), chunks[0])
		if err == nil {
			return nil
		}
		if transient(err) {
			return fmt.Errorf("insert %d job logs: %w", len(logs), err)
		}
	}
	var refused []refusedLog
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		refused = refused[:0]
		for _, c := range chunks {
			if err := s.insertContained(tx, c, &refused); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d job logs: %w", len(logs), err)
	}
	s.reportRefusedLogs(refused)
	return nil
}

// reportRefusedLogs says in the node's log which lines the database refused.
func (s *Store) reportRefusedLogs(refused []refusedLog) {
	for _, r := range refused {
		l := s.log.WithField("job_id", r.line.JobID).WithError(r.err)
		if r.placeholder {
			l.Warnf("the database refused a job_logs line; wrote a placeholder instead (the line began %q)", Storable(r.line.Message, 200))
		} else {
			l.Errorf("the database refused a job_logs line and its placeholder; left it out: %s", r.line.Message)
		}
	}
}

// refusedLog is a line the database refused.
type refusedLog struct {
	line        models.JobLog
	err         error
	placeholder bool
}

// insertContained inserts logs; when the database refuses them for a
// reason that is not transient, it inserts each half on its own, down to
// single lines, and replaces a single refused line by a placeholder, or
// leaves it out when that is refused too.
func (s *Store) insertContained(tx *gorm.DB, logs []models.JobLog, refused *[]refusedLog) error {
	err := s.savepoint(tx, func() error { return execLogInsert(tx, logs) })
	if err == nil || transient(err) {
		return err
	}
	if len(logs) > 1 {
		half := len(logs) / 2
		if err := s.insertContained(tx, logs[:half], refused); err != nil {
			return err
		}
		return s.insertContained(tx, logs[half:], refused)
	}
	l := logs[0]
	l.Message = s.storable("chime: log line could not be stored: "+err.Error(), chimedb.MaxLogMessageBytes)
	perr := s.savepoint(tx, func() error { return execLogInsert(tx, []models.JobLog{l}) })
	if perr != nil && transient(perr) {
		return perr
	}
	*refused = append(*refused, refusedLog{line: logs[0], err: err, placeholder: perr == nil})
	return nil
}

// insertJobLogs writes the lines that store itself adds to a transaction.
func (s *Store) insertJobLogs(db *gorm.DB, logs []models.JobLog) error {
	for _, c := range logChunks(s.storableLogs(logs)) {
		if err := execLogInsert(db, c); err != nil {
			return err
		}
	}
	return nil
}

// storableLogs returns logs with every message and level storable; it
// copies the slice only when a line had to change.
func (s *Store) storableLogs(logs []models.JobLog) []models.JobLog {
	out := logs
	for i := range logs {
		msg := s.storable(logs[i].Message, chimedb.MaxLogMessageBytes)
		level := s.storable(logs[i].Level, chimedb.MaxLogLevelBytes)
		if len(msg) == len(logs[i].Message) && len(level) == len(logs[i].Level) && msg == logs[i].Message && level == logs[i].Level {
			continue
		}
		if &out[0] == &logs[0] {
			out = append([]models.JobLog(nil), logs...)
		}
		out[i].Message, out[i].Level = msg, level
	}
	return out
}

// logChunks splits logs into INSERTs of at most jobLogsPerInsert rows and
// about stmtTextBudget bytes of messages.
func logChunks(logs []models.JobLog) [][]models.JobLog {
	var chunks [][]models.JobLog
	start, size := 0, 0
	for i := range logs {
		n := len(logs[i].Message)
		if i > start && (i-start == jobLogsPerInsert || size+n > stmtTextBudget) {
			chunks = append(chunks, logs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if len(logs) == 0 {
		return nil
	}
	return append(chunks, logs[start:])
}

func execLogInsert(db *gorm.DB, logs []models.JobLog) error {
	now := DBTime(time.Now())
	var b strings.Builder
	b.WriteString("INSERT INTO job_logs (job_id, level, message, created_at) VALUES ")
	args := make([]any, 0, 4*len(logs))
	for i, l := range logs {
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
	return db.Exec(b.String(), args...).Error
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
// notify.LogTailer. The row is read first, as ListJobLogs does.
func (s *Store) TailLogs(ctx context.Context, jobID int64, n int) ([]string, error) {
	line, ok, err := s.succeededLine(ctx, jobID)
	if err != nil {
		return nil, fmt.Errorf("tail logs of job %d: %w", jobID, err)
	}
	var logs []models.JobLog
	if err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("id DESC").Limit(n).Find(&logs).Error; err != nil {
		return nil, fmt.Errorf("tail logs of job %d: %w", jobID, err)
	}
	if ok && n > 0 {
		stale, err := s.succeededRowStored(ctx, jobID)
		if err != nil {
			return nil, fmt.Errorf("tail logs of job %d: %w", jobID, err)
		}
		if !stale {
			if len(logs) == n {
				logs = logs[:n-1]
			}
			logs = append([]models.JobLog{line}, logs...)
		}
	}
	out := make([]string, 0, len(logs))
	for i := len(logs) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprintf("%s %-5s %s", logs[i].CreatedAt.UTC().Format("15:04:05.000"), logs[i].Level, logs[i].Message))
	}
	return out, nil
}

// succeededLine is a succeeded job's last log line, derived from its row
// (see models.OutcomeLogID).
func (s *Store) succeededLine(ctx context.Context, jobID int64) (models.JobLog, bool, error) {
	var j models.Job
	err := s.db.WithContext(ctx).Select("id, status, attempt, scheduled_at, finished_at").Where("id = ?", jobID).Limit(1).Find(&j).Error
	if err != nil || j.ID == 0 {
		return models.JobLog{}, false, err
	}
	line, ok := models.SucceededLine(&j)
	return line, ok, nil
}

// succeededRowStored says whether a succeeded job has its last line as a
// row already: it succeeded before the line stopped being written, and
// gets no derived one.
func (s *Store) succeededRowStored(ctx context.Context, jobID int64) (bool, error) {
	var written []int64
	err := s.db.WithContext(ctx).Model(&models.JobLog{}).Where("job_id = ? AND message LIKE ?", jobID, "succeeded (%").
		Limit(1).Pluck("id", &written).Error
	return len(written) > 0, err
}
