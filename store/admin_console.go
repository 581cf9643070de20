package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// The console's reads. Each stays on an index of jobs with 1,000,000 rows
// in the table: idx_jobs_claim_order (status, claim_key, id) for anything
// by status and time, a run_at bound turned into a claim_key one
// (ClaimKeyFrom, ClaimKeyUntil), and (schedule_id, scheduled_at) for a
// schedule's jobs. The console's TestQueriesUseIndexes pins the plans.

var allJobStatuses = []models.JobStatus{
	models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused,
	models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled,
}

// CountJobsByStatus counts jobs due (run_at) since, by status. Naming
// every status makes it a range scan of idx_jobs_claim_order per status.
// A row whose claim_key is above ClaimKeyUntil(since) is due after since
// whatever its priority, so that part, nearly all of a day, is counted
// from the index alone; only the few minutes below it read run_at.
func (a *Admin) CountJobsByStatus(ctx context.Context, since time.Time) (map[models.JobStatus]int64, error) {
	var rows []struct {
		Status models.JobStatus
		N      int64
	}
	sure := ClaimKeyUntil(since)
	err := a.s.db.WithContext(ctx).Raw(`SELECT status, SUM(n) AS n FROM (
		SELECT status, COUNT(*) AS n FROM jobs WHERE status IN ? AND claim_key > ? GROUP BY status
		UNION ALL
		SELECT status, COUNT(*) AS n FROM jobs WHERE status IN ? AND claim_key >= ? AND claim_key <= ? AND run_at >= ? GROUP BY status
		) t GROUP BY status`,
		allJobStatuses, sure, allJobStatuses, ClaimKeyFrom(since), sure, DBTime(since)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs by status: %w", err)
	}
	out := make(map[models.JobStatus]int64, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// CountJobsPerMinute counts the jobs due in each of the n minutes from
// start, and how many of them failed, grouped in the database.
func (a *Admin) CountJobsPerMinute(ctx context.Context, start time.Time, n int) ([]chimedb.MinuteCount, error) {
	n = max(n, 0)
	start = start.UTC().Truncate(time.Minute)
	end := start.Add(time.Duration(n) * time.Minute)
	var rows []struct {
		M        int64
		Fires    int64
		Failures int64
	}
	err := a.s.db.WithContext(ctx).Model(&models.Job{}).
		Select(a.s.unixMinuteSQL("run_at")+" AS m, COUNT(*) AS fires, SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failures").
		Where("status IN ? AND claim_key >= ? AND claim_key <= ? AND run_at >= ? AND run_at < ?", allJobStatuses,
			ClaimKeyFrom(start), ClaimKeyUntil(end), DBTime(start), DBTime(end)).
		Group("m").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs per minute: %w", err)
	}
	out := make([]chimedb.MinuteCount, n)
	for i := range out {
		out[i].Start = start.Add(time.Duration(i) * time.Minute)
	}
	base := start.Unix() / 60
	for _, r := range rows {
		if i := r.M - base; i >= 0 && i < int64(n) {
			out[i].Fires, out[i].Failures = r.Fires, r.Failures
		}
	}
	return out, nil
}

// unixMinuteSQL is an SQL expression for the Unix minute (seconds since
// 1970 / 60, rounded down) of the timestamp column col, for grouping by
// minute in the database.
func (s *Store) unixMinuteSQL(col string) string {
	switch s.dialect {
	case MySQL:
		return "FLOOR(UNIX_TIMESTAMP(" + col + ") / 60)"
	case Postgres:
		return "CAST(FLOOR(EXTRACT(EPOCH FROM " + col + ") / 60) AS BIGINT)"
	}
	return "CAST(strftime('%s', " + col + ") AS INTEGER) / 60"
}

// CountRunningByNode counts running jobs per node (idx_jobs_claim_order by
// status).
func (a *Admin) CountRunningByNode(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		NodeID string
		N      int64
	}
	err := a.s.db.WithContext(ctx).Model(&models.Job{}).Select("node_id, COUNT(*) AS n").
		Where("status = ?", models.JobRunning).Group("node_id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count running jobs: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.NodeID] = r.N
	}
	return out, nil
}

// LastJobs returns the latest job of each schedule, by scheduled_at: one
// LIMIT 1 probe of uq_jobs_schedule_fire per schedule, lastJobsChunk
// probes to a statement: SQLite refuses a compound SELECT of more than
// 500 terms.
func (a *Admin) LastJobs(ctx context.Context, scheduleIDs []int64) (map[int64]models.Job, error) {
	out := make(map[int64]models.Job, len(scheduleIDs))
	for chunk := range slices.Chunk(scheduleIDs, lastJobsChunk) {
		parts := make([]string, len(chunk))
		args := make([]any, len(chunk))
		for i, id := range chunk {
			parts[i] = fmt.Sprintf("SELECT * FROM (SELECT id, schedule_id, status, scheduled_at, finished_at FROM jobs "+
				"WHERE schedule_id = ? ORDER BY scheduled_at DESC LIMIT 1) t%d", i)
			args[i] = id
		}
		var rows []models.Job
		if err := a.s.db.WithContext(ctx).Raw(strings.Join(parts, " UNION ALL "), args...).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("latest jobs of schedules: %w", err)
		}
		for _, j := range rows {
			if j.ScheduleID != nil {
				out[*j.ScheduleID] = j
			}
		}
	}
	return out, nil
}

// lastJobsChunk is the most schedules LastJobs probes in one statement.
const lastJobsChunk = 200

// ScheduleJobs lists a schedule's latest jobs, newest fire first, walking
// uq_jobs_schedule_fire backwards.
func (a *Admin) ScheduleJobs(ctx context.Context, scheduleID int64, limit int) ([]models.Job, error) {
	var out []models.Job
	err := a.s.db.WithContext(ctx).Where("schedule_id = ?", scheduleID).Order("scheduled_at DESC").Limit(max(limit, 1)).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("jobs of schedule %d: %w", scheduleID, err)
	}
	return out, nil
}

// DefinitionNames maps definition ids to names.
func (a *Admin) DefinitionNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	return names[models.JobDefinition](ctx, a.s, "job definitions", ids,
		func(d *models.JobDefinition) (int64, string) { return d.ID, d.Name })
}

// ScheduleNames maps schedule ids to names.
func (a *Admin) ScheduleNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	return names[models.Schedule](ctx, a.s, "schedules", ids,
		func(s *models.Schedule) (int64, string) { return s.ID, s.Name })
}

func names[T any](ctx context.Context, s *Store, what string, ids []int64, idName func(*T) (int64, string)) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []T
	if err := s.db.WithContext(ctx).Select("id, name").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("names of %s: %w", what, err)
	}
	for i := range rows {
		id, name := idName(&rows[i])
		out[id] = name
	}
	return out, nil
}

// DefinitionChoices lists definitions by name for the forms' and filters'
// choices.
func (a *Admin) DefinitionChoices(ctx context.Context) ([]models.JobDefinition, error) {
	var out []models.JobDefinition
	err := a.s.db.WithContext(ctx).Select("id, name, task_type").Order("name").Limit(chimedb.MaxDefinitionChoices).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list job definitions: %w", err)
	}
	return out, nil
}
