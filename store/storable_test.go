package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestStorable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "plain", store.Storable("plain", 10))
	require.Equal(t, "HTTP 200 \uFFFD", store.Storable("HTTP 200 \xE9", 100))
	require.Equal(t, "a\uFFFDb", store.Storable("a\xff\xfeb", 100), "a run of bad bytes is one U+FFFD")

	long := strings.Repeat("é", 50_000) // 100,000 bytes
	got := store.Storable(long, chimedb.MaxErrorBytes)
	require.LessOrEqual(t, len(got), chimedb.MaxErrorBytes)
	require.True(t, utf8.ValidString(got))
	cut := len(long) - strings.Index(got, "…[truncated")
	require.True(t, strings.HasSuffix(got, fmt.Sprintf("…[truncated %d bytes]", cut)), got[len(got)-40:])
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(got, fmt.Sprintf("…[truncated %d bytes]", cut))))

	// Every cap from tiny to a few hundred bytes, on text of 1-4 byte runes:
	// never over the cap, always valid.
	mixed := strings.Repeat("a€𝄞é\xE9", 40)
	for max := 0; max < 300; max++ {
		got := store.Storable(mixed, max)
		require.LessOrEqual(t, len(got), max, "cap %d", max)
		require.True(t, utf8.ValidString(got), "cap %d", max)
	}
	require.Equal(t, "warni", store.Storable("warning", 5), "a cap too small for a marker just cuts")
}

// TestTextCapsMatchSchema ties store's caps to the migrated columns: the
// TEXT columns are capped at their size, and the result below its own.
func TestTextCapsMatchSchema(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.MySQL)
	octets := func(table, col string) int64 {
		var n int64
		require.NoError(t, st.DB().Raw(`SELECT CHARACTER_OCTET_LENGTH FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`, table, col).Scan(&n).Error)
		require.Positive(t, n, "%s.%s", table, col)
		return n
	}
	require.EqualValues(t, octets("jobs", "error"), chimedb.MaxErrorBytes)
	require.EqualValues(t, octets("job_logs", "message"), chimedb.MaxLogMessageBytes)
	require.EqualValues(t, octets("job_logs", "level")/4, chimedb.MaxLogLevelBytes, "VARCHAR(16) in utf8mb4")
	require.LessOrEqual(t, int64(chimedb.MaxResultBytes), octets("jobs", "result"))
}

func runningJobs(t *testing.T, st *store.Store, node string, n int) []int64 {
	t.Helper()
	now := store.DBTime(time.Now())
	ids := make([]int64, n)
	for i := range ids {
		j := models.Job{JobDefinitionID: 1, ScheduledAt: now, RunAt: now, Status: models.JobRunning, NodeID: node, Attempt: 1}
		require.NoError(t, st.DB().Create(&j).Error)
		ids[i] = j.ID
	}
	return ids
}

// Text MySQL refuses (a byte that is not UTF-8, an error longer than its
// column) is made storable, and the same on SQLite.
func TestCompleteJobsStoresUnstorableText(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ids := runningJobs(t, st, "n", 4)
		now := store.DBTime(time.Now())
		nul := "a\x00b" // valid UTF-8 that MySQL and SQLite keep as it is
		badResult := "HTTP 200 \xE9"
		longErr := strings.Repeat("x", 70_000)
		bigResult := strings.Repeat("r", chimedb.MaxResultBytes+10)
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: ids[0], Status: models.JobSucceeded, FinishedAt: now, Result: &badResult},
			{ID: ids[1], Status: models.JobFailed, FinishedAt: now, Error: &longErr},
			{ID: ids[2], Status: models.JobSucceeded, FinishedAt: now, Result: &bigResult},
			{ID: ids[3], Status: models.JobFailed, FinishedAt: now, Result: &nul, Error: &nul},
		}})
		require.NoError(t, err)
		require.ElementsMatch(t, ids, applied)
		j := testdb.GetJob(t, st, ids[0])
		require.Equal(t, "HTTP 200 \uFFFD", *j.Result)
		j = testdb.GetJob(t, st, ids[1])
		require.Equal(t, models.JobFailed, j.Status)
		require.LessOrEqual(t, len(*j.Error), chimedb.MaxErrorBytes)
		require.Greater(t, len(*j.Error), chimedb.MaxErrorBytes-8, "the marker is sized for the longest count")
		require.True(t, strings.HasSuffix(*j.Error, fmt.Sprintf("…[truncated %d bytes]", 70_000-strings.Count(*j.Error, "x"))))
		j = testdb.GetJob(t, st, ids[2])
		require.LessOrEqual(t, len(*j.Result), chimedb.MaxResultBytes)
		require.Contains(t, *j.Result, "…[truncated ")
		j = testdb.GetJob(t, st, ids[3])
		if st.Dialect() == store.Postgres {
			// PostgreSQL refuses NUL in text: it becomes U+FFFD, like a bad byte.
			nul = "a\uFFFDb"
		}
		require.Equal(t, nul, deref(j.Result))
		require.Equal(t, nul, deref(j.Error))
	})
}

// refuse installs a trigger that makes the database refuse any row of
// table whose column equals value, the way MySQL refuses a value it cannot
// store: a real refusal for which no sanitizing helps.
func refuse(t *testing.T, st *store.Store, table, event, column, value string) {
	t.Helper()
	var stmt string
	switch st.Dialect() {
	case store.Postgres:
		require.NoError(t, st.DB().Exec(fmt.Sprintf(`CREATE FUNCTION refuse_%s() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'refused by test' USING ERRCODE = '22007'; END $$`, table)).Error)
		stmt = fmt.Sprintf(`CREATE TRIGGER refuse_%s BEFORE %s ON %s FOR EACH ROW
			WHEN (NEW.%s = '%s') EXECUTE FUNCTION refuse_%s()`, table, event, table, column, value, table)
	case store.MySQL:
		stmt = fmt.Sprintf(`CREATE TRIGGER refuse_%s BEFORE %s ON %s FOR EACH ROW
			IF NEW.%s = '%s' THEN SIGNAL SQLSTATE '22007' SET MESSAGE_TEXT = 'refused by test', MYSQL_ERRNO = 1366; END IF`,
			table, event, table, column, value)
	default:
		stmt = fmt.Sprintf(`CREATE TRIGGER refuse_%s BEFORE %s ON %s FOR EACH ROW
			WHEN NEW.%s = '%s' BEGIN SELECT RAISE(ABORT, 'refused by test'); END`, table, event, table, column, value)
	}
	require.NoError(t, st.DB().Exec(stmt).Error)
}

// One outcome the database refuses does not hold back the others in its
// batch: they are written, and the refused one gets a placeholder error
// (its status stands) so that the completer never retries it forever.
func TestCompleteJobsContainsRefusedRow(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		refuse(t, st, "jobs", "UPDATE", "result", "poison")
		ids := runningJobs(t, st, "n", 7)
		now := store.DBTime(time.Now())
		var outs []chimedb.JobOutcome
		for i, id := range ids {
			res := fmt.Sprintf("ok %d", i)
			if i == 4 {
				res = "poison"
			}
			outs = append(outs, chimedb.JobOutcome{ID: id, Status: models.JobSucceeded, FinishedAt: now, Result: &res})
		}
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: outs})
		require.NoError(t, err)
		require.ElementsMatch(t, ids, applied)
		for i, id := range ids {
			j := testdb.GetJob(t, st, id)
			require.Equal(t, models.JobSucceeded, j.Status, "job %d", i)
			if i == 4 {
				require.Nil(t, j.Result)
				require.Contains(t, deref(j.Error), "chime: outcome could not be stored: ")
				require.Contains(t, deref(j.Error), "refused by test")
				continue
			}
			require.Equal(t, fmt.Sprintf("ok %d", i), deref(j.Result))
			require.Nil(t, j.Error)
		}

		// A row refused on the guarded slow path (another row of the batch
		// was canceled meanwhile) is contained the same way.
		ids = runningJobs(t, st, "n", 3)
		require.NoError(t, st.DB().Exec(`UPDATE jobs SET status = 'canceled' WHERE id = ?`, ids[0]).Error)
		poison, fine := "poison", "fine"
		applied, err = st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: ids[0], Status: models.JobSucceeded, FinishedAt: now, Result: &fine},
			{ID: ids[1], Status: models.JobFailed, FinishedAt: now, Result: &poison},
			{ID: ids[2], Status: models.JobSucceeded, FinishedAt: now, Result: &fine},
		}})
		require.NoError(t, err)
		require.ElementsMatch(t, ids[1:], applied)
		require.Equal(t, models.JobCanceled, testdb.GetJob(t, st, ids[0]).Status)
		j := testdb.GetJob(t, st, ids[1])
		require.Equal(t, models.JobFailed, j.Status)
		require.Contains(t, deref(j.Error), "chime: outcome could not be stored")
		require.Equal(t, "fine", deref(testdb.GetJob(t, st, ids[2]).Result))
	})
}

// A log line the database refuses does not take the other lines of its
// batch with it: they are written, and it is replaced by a placeholder.
func TestInsertJobLogsContainsRefusedLine(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		refuse(t, st, "job_logs", "INSERT", "message", "poison")
		var logs []models.JobLog
		for i := 0; i < 9; i++ {
			msg := fmt.Sprintf("line %d", i)
			if i == 6 {
				msg = "poison"
			}
			logs = append(logs, models.JobLog{JobID: int64(100 + i), Level: "info", Message: msg})
		}
		// Bad UTF-8 and an over-long line are made storable, not refused.
		logs = append(logs, models.JobLog{JobID: 200, Level: "warning", Message: "status 200 \xE9"},
			models.JobLog{JobID: 201, Level: "info", Message: strings.Repeat("y", 100_000)})
		require.NoError(t, st.InsertJobLogs(ctx, logs))
		var rows []models.JobLog
		require.NoError(t, st.DB().Order("id").Find(&rows).Error)
		require.Len(t, rows, len(logs))
		for i, r := range rows[:9] {
			require.Equal(t, int64(100+i), r.JobID)
			if i == 6 {
				require.Contains(t, r.Message, "chime: log line could not be stored: ")
				continue
			}
			require.Equal(t, fmt.Sprintf("line %d", i), r.Message)
		}
		require.Equal(t, "status 200 \uFFFD", rows[9].Message)
		require.LessOrEqual(t, len(rows[10].Message), chimedb.MaxLogMessageBytes)
		require.Contains(t, rows[10].Message, "…[truncated ")
	})
}

// Many large values in one batch are split over statements that each fit
// max_allowed_packet (16 MiB on MariaDB): 20 results of 1 MiB are 20 MiB.
func TestCompleteJobsSplitsLargeBatches(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ids := runningJobs(t, st, "n", 20)
		now := store.DBTime(time.Now())
		big := strings.Repeat("z", chimedb.MaxResultBytes-100)
		var outs []chimedb.JobOutcome
		for _, id := range ids {
			outs = append(outs, chimedb.JobOutcome{ID: id, Status: models.JobSucceeded, FinishedAt: now, Result: &big})
		}
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: outs})
		require.NoError(t, err)
		require.Len(t, applied, len(ids))
		var n int64
		require.NoError(t, st.DB().Model(&models.Job{}).Where("status = 'succeeded' AND LENGTH(result) = ?", len(big)).Count(&n).Error)
		require.EqualValues(t, len(ids), n)

		var logs []models.JobLog
		line := strings.Repeat("l", chimedb.MaxLogMessageBytes)
		for i := 0; i < 300; i++ { // 19.7 MiB
			logs = append(logs, models.JobLog{JobID: 1, Level: "info", Message: line})
		}
		require.NoError(t, st.InsertJobLogs(ctx, logs))
		require.NoError(t, st.DB().Model(&models.JobLog{}).Count(&n).Error)
		require.EqualValues(t, len(logs), n)
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A batch's columns are written per row where rows differ and once where
// they agree (writeOutcomes folds those out of CASE): every row gets its
// own values either way, in a uniform batch, a mixed one, and a batch of
// one.
func TestCompleteJobsUniformAndMixedColumns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ids := runningJobs(t, st, "n", 8)
		t0 := store.DBTime(time.Now()).Truncate(time.Millisecond)
		same := "same"
		other := "other"
		boom := "boom"
		at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
		batches := [][]chimedb.JobOutcome{
			// Uniform: status, result, error, node_id and run_at agree.
			{
				{ID: ids[0], Status: models.JobSucceeded, FinishedAt: at(0), Result: &same},
				{ID: ids[1], Status: models.JobSucceeded, FinishedAt: at(1), Result: &same},
				{ID: ids[2], Status: models.JobSucceeded, FinishedAt: at(1), Result: &same},
			},
			// Mixed: a retry (pending, new run_at, leaves the node), a
			// failure, a success with another result and one without.
			{
				{ID: ids[3], Status: models.JobPending, RunAt: at(60), Error: &boom},
				{ID: ids[4], Status: models.JobFailed, FinishedAt: at(4), Error: &boom},
				{ID: ids[5], Status: models.JobSucceeded, FinishedAt: at(5), Result: &other},
				{ID: ids[6], Status: models.JobSucceeded, FinishedAt: at(6)},
			},
			{{ID: ids[7], Status: models.JobStopped, FinishedAt: at(7), Error: &boom}},
		}
		for _, b := range batches {
			applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: b})
			require.NoError(t, err)
			require.Len(t, applied, len(b))
		}
		type want struct {
			status   models.JobStatus
			finished *time.Time
			runAt    *time.Time // nil: unchanged
			result   *string
			errText  *string
			node     string
		}
		p := func(t time.Time) *time.Time { return &t }
		wants := []want{
			{models.JobSucceeded, p(at(0)), nil, &same, nil, "n"},
			{models.JobSucceeded, p(at(1)), nil, &same, nil, "n"},
			{models.JobSucceeded, p(at(1)), nil, &same, nil, "n"},
			{models.JobPending, nil, p(at(60)), nil, &boom, ""},
			{models.JobFailed, p(at(4)), nil, nil, &boom, "n"},
			{models.JobSucceeded, p(at(5)), nil, &other, nil, "n"},
			{models.JobSucceeded, p(at(6)), nil, nil, nil, "n"},
			{models.JobStopped, p(at(7)), nil, nil, &boom, "n"},
		}
		for i, w := range wants {
			var j models.Job
			require.NoError(t, st.DB().Take(&j, ids[i]).Error)
			require.Equal(t, w.status, j.Status, "job %d", i)
			if w.finished == nil {
				require.Nil(t, j.FinishedAt, "job %d", i)
			} else {
				require.NotNil(t, j.FinishedAt, "job %d", i)
				require.True(t, w.finished.Equal(*j.FinishedAt), "job %d: finished_at %v, want %v", i, *j.FinishedAt, *w.finished)
			}
			if w.runAt != nil {
				require.True(t, w.runAt.Equal(j.RunAt), "job %d: run_at %v, want %v", i, j.RunAt, *w.runAt)
			} else {
				require.True(t, j.RunAt.Before(t0.Add(time.Second)), "job %d: run_at moved to %v", i, j.RunAt)
			}
			require.Equal(t, w.result, j.Result, "job %d", i)
			require.Equal(t, w.errText, j.Error, "job %d", i)
			require.Equal(t, w.node, j.NodeID, "job %d", i)
		}
	})
}

// CompleteJobs writes the node's lines and each written outcome's line in
// its transaction, in that order: the node's lines whatever becomes of the
// outcomes, an outcome's line only with its outcome; a line the database
// refuses is contained as InsertJobLogs contains it, and costs no outcome.
func TestCompleteJobsWritesLines(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		refuse(t, st, "job_logs", "INSERT", "message", "poison")
		for _, poison := range []bool{false, true} {
			ids := runningJobs(t, st, "n", 3)
			// Canceled meanwhile: its outcome is not written, nor its line.
			require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", ids[2]).Update("status", models.JobCanceled).Error)
			now := store.DBTime(time.Now())
			logs := []models.JobLog{
				{JobID: ids[0], Level: "info", Message: "task line", CreatedAt: now},
				{JobID: ids[2], Level: "info", Message: "its task's last line", CreatedAt: now},
			}
			if poison {
				logs = append(logs, models.JobLog{JobID: ids[1], Level: "info", Message: "poison", CreatedAt: now})
			}
			boom := "boom"
			applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Logs: logs, Outcomes: []chimedb.JobOutcome{
				{ID: ids[0], Status: models.JobFailed, FinishedAt: now, Error: &boom,
					Log: &models.JobLog{Level: "error", Message: "failed (attempt 1 of 1): boom", CreatedAt: now}},
				{ID: ids[1], Status: models.JobSucceeded, FinishedAt: now},
				{ID: ids[2], Status: models.JobFailed, FinishedAt: now, Error: &boom,
					Log: &models.JobLog{Level: "error", Message: "not written", CreatedAt: now}},
			}})
			require.NoError(t, err)
			require.ElementsMatch(t, ids[:2], applied)
			stored := func(id int64) []string {
				var rows []models.JobLog
				require.NoError(t, st.DB().Where("job_id = ?", id).Order("id").Find(&rows).Error)
				var out []string
				for _, r := range rows {
					out = append(out, r.Level+": "+r.Message)
				}
				return out
			}
			require.Equal(t, []string{"info: task line", "error: failed (attempt 1 of 1): boom"}, stored(ids[0]))
			require.Equal(t, []string{"info: its task's last line"}, stored(ids[2]))
			if poison {
				got := stored(ids[1])
				require.Len(t, got, 1)
				require.Contains(t, got[0], "chime: log line could not be stored: ")
			} else {
				require.Empty(t, stored(ids[1]))
			}
			require.Equal(t, models.JobSucceeded, testdb.GetJob(t, st, ids[1]).Status)
		}
	})
}
