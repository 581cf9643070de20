package console

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The console's own reads. Each stays on an index of jobs with 1,000,000
// rows in the table: idx_jobs_claim_order (status, claim_key, id) for
// anything by status and time, a run_at bound turned into a claim_key one
// (store.ClaimKeyFrom, store.ClaimKeyUntil), and (schedule_id, scheduled_at)
// for a schedule's jobs.

var allJobStatuses = []models.JobStatus{
	models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused,
	models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled,
}

// statusCounts counts jobs due (run_at) since t, by status. Naming every
// status makes it a range scan of idx_jobs_claim_order per status. A row
// whose claim_key is above store.ClaimKeyUntil(since) is due after since
// whatever its priority, so that part, nearly all of a day, is counted from
// the index alone; only the few minutes below it read run_at.
func statusCounts(ctx context.Context, st *store.Store, since time.Time) (map[models.JobStatus]int64, error) {
	var rows []struct {
		Status models.JobStatus
		N      int64
	}
	sure := store.ClaimKeyUntil(since)
	err := st.DB().WithContext(ctx).Raw(`SELECT status, SUM(n) AS n FROM (
		SELECT status, COUNT(*) AS n FROM jobs WHERE status IN ? AND claim_key > ? GROUP BY status
		UNION ALL
		SELECT status, COUNT(*) AS n FROM jobs WHERE status IN ? AND claim_key >= ? AND claim_key <= ? AND run_at >= ? GROUP BY status
		) t GROUP BY status`,
		allJobStatuses, sure, allJobStatuses, store.ClaimKeyFrom(since), sure, store.DBTime(since)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs by status: %w", err)
	}
	out := make(map[models.JobStatus]int64, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// minuteBucket is one minute of the overview's chart.
type minuteBucket struct {
	Start           time.Time
	Fires, Failures int64
}

// perMinute counts the jobs due in each of the last n minutes before now,
// and how many of them failed, grouped in the database.
func perMinute(ctx context.Context, st *store.Store, now time.Time, n int) ([]minuteBucket, error) {
	end := now.UTC().Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-time.Duration(n) * time.Minute)
	minute := st.UnixMinuteSQL("run_at")
	var rows []struct {
		M        int64
		Fires    int64
		Failures int64
	}
	err := st.DB().WithContext(ctx).Model(&models.Job{}).
		Select(minute+" AS m, COUNT(*) AS fires, SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failures").
		Where("status IN ? AND claim_key >= ? AND claim_key <= ? AND run_at >= ? AND run_at < ?", allJobStatuses,
			store.ClaimKeyFrom(start), store.ClaimKeyUntil(end), store.DBTime(start), store.DBTime(end)).
		Group("m").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs per minute: %w", err)
	}
	out := make([]minuteBucket, n)
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

// lastRuns returns the latest job of each schedule, by scheduled_at: one
// LIMIT 1 probe of uq_jobs_schedule_fire per schedule, in one statement.
func lastRuns(ctx context.Context, st *store.Store, ids []int64) (map[int64]models.Job, error) {
	out := make(map[int64]models.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	parts := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("SELECT * FROM (SELECT id, schedule_id, status, scheduled_at, finished_at FROM jobs "+
			"WHERE schedule_id = ? ORDER BY scheduled_at DESC LIMIT 1) t%d", i)
		args[i] = id
	}
	var rows []models.Job
	if err := st.DB().WithContext(ctx).Raw(strings.Join(parts, " UNION ALL "), args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("latest jobs of schedules: %w", err)
	}
	for _, j := range rows {
		if j.ScheduleID != nil {
			out[*j.ScheduleID] = j
		}
	}
	return out, nil
}

// scheduleJobs lists a schedule's latest jobs, newest fire first, walking
// uq_jobs_schedule_fire backwards.
func scheduleJobs(ctx context.Context, st *store.Store, id int64, limit int) ([]models.Job, error) {
	var out []models.Job
	err := st.DB().WithContext(ctx).Where("schedule_id = ?", id).Order("scheduled_at DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("jobs of schedule %d: %w", id, err)
	}
	return out, nil
}

// runningByNode counts running jobs per node (idx_jobs_claim_order by status).
func runningByNode(ctx context.Context, st *store.Store) (map[string]int64, error) {
	var rows []struct {
		NodeID string
		N      int64
	}
	err := st.DB().WithContext(ctx).Model(&models.Job{}).Select("node_id, COUNT(*) AS n").
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

// definitionNames maps definition ids to names.
func definitionNames(ctx context.Context, st *store.Store, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.JobDefinition
	if err := st.DB().WithContext(ctx).Select("id, name").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("names of job definitions: %w", err)
	}
	for _, d := range rows {
		out[d.ID] = d.Name
	}
	return out, nil
}

// scheduleNames maps schedule ids to names.
func scheduleNames(ctx context.Context, st *store.Store, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Schedule
	if err := st.DB().WithContext(ctx).Select("id, name").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("names of schedules: %w", err)
	}
	for _, s := range rows {
		out[s.ID] = s.Name
	}
	return out, nil
}

// allDefinitions lists definitions by name for the forms' and filters'
// choices; there are few (an admin writes each one).
func allDefinitions(ctx context.Context, st *store.Store) ([]models.JobDefinition, error) {
	var out []models.JobDefinition
	if err := st.DB().WithContext(ctx).Select("id, name, task_type").Order("name").Limit(1000).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list job definitions: %w", err)
	}
	return out, nil
}

// searchSchedules is the API's schedule page with a name substring: the
// schedules table holds what admins wrote, small enough to scan.
func searchSchedules(ctx context.Context, st *store.Store, p *store.AdminListParams, q string) ([]models.Schedule, error) {
	db := st.DB().WithContext(ctx).Order("id DESC").Limit(p.Limit)
	if p.BeforeID > 0 {
		db = db.Where("id < ?", p.BeforeID)
	}
	if p.Status != "" {
		db = db.Where("status = ?", p.Status)
	}
	// '!' escapes: a backslash means different things to MySQL and SQLite.
	esc := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(q)
	var out []models.Schedule
	if err := db.Where(`name LIKE ? ESCAPE '!'`, "%"+esc+"%").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("search schedules: %w", err)
	}
	return out, nil
}
