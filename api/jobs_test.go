package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestJobs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const path = "/api/v1/jobs"
		def := itoa(b.definition("report"))

		// Ad hoc run: defaults merged with the request's params.
		j := b.ok(201, "POST", path, `{"job_definition_id":`+def+`,"params":{"fail":true}}`)
		jid := itoa(id(j))
		require.Nil(t, j["schedule_id"])
		require.Equal(t, "pending", j["status"])
		require.Equal(t, map[string]any{"duration": "10ms", "fail": true}, j["params"])
		require.Equal(t, 1, b.added)
		later := b.ok(201, "POST", path, `{"job_definition_id":`+def+`,"run_at":"2031-01-01T00:00:00Z"}`)
		require.Equal(t, "2031-01-01T00:00:00Z", later["run_at"])
		require.Equal(t, 1, b.added, "a job due later does not wake the task engine")
		b.fails(400, "job_definition_id", "does not exist", "POST", path, `{"job_definition_id":999}`)
		b.fails(400, "job_definition_id", "required", "POST", path, `{}`)
		b.fails(400, "params.duration", "invalid duration", "POST", path, `{"job_definition_id":`+def+`,"params":{"duration":"x"}}`)
		b.fails(400, "params", "must be a JSON object", "POST", path, `{"job_definition_id":`+def+`,"params":[]}`)
		b.fails(400, "schedule_id", "unknown field", "POST", path, `{"job_definition_id":`+def+`,"schedule_id":1}`)

		got := b.ok(200, "GET", path+"/"+jid, "")
		require.Equal(t, j["id"], got["id"])
		b.fails(404, "", "job 999 does not exist", "GET", path+"/999", "")

		// Logs, oldest first, with a cursor to follow.
		logs := b.ok(200, "GET", path+"/"+jid+"/logs", "")
		require.Len(t, items(logs), 1)
		require.Contains(t, items(logs)[0].(map[string]any)["message"], "ad hoc run")
		follow := b.ok(200, "GET", path+"/"+jid+"/logs?cursor="+logs["next_cursor"].(string), "")
		require.Empty(t, items(follow))
		require.Equal(t, logs["next_cursor"], follow["next_cursor"], "an empty poll keeps the cursor")
		b.fails(404, "", "does not exist", "GET", path+"/999/logs", "")

		// Control: a pending job cannot pause; stop cancels it at once.
		b.fails(409, "", "only a queued or running job can be paused", "POST", path+"/"+jid+"/pause", "")
		b.fails(409, "", "only a paused job can be resumed", "POST", path+"/"+jid+"/resume", "")
		stopped := b.ok(202, "POST", path+"/"+jid+"/stop", "")
		require.Equal(t, "canceled", stopped["status"])
		require.NotNil(t, stopped["finished_at"])
		b.fails(409, "", "already canceled", "POST", path+"/"+jid+"/stop", "")

		// A running job gets control requests for its engine.
		run := id(later)
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", run).
			Updates(map[string]any{"status": models.JobRunning, "node_id": "n1"}).Error)
		rid := itoa(run)
		require.Equal(t, "pause", b.ok(202, "POST", path+"/"+rid+"/pause", "")["control"])
		// Resume before the engine acted withdraws the pause.
		require.Equal(t, "", b.ok(202, "POST", path+"/"+rid+"/resume", "")["control"])
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", run).Update("status", models.JobPaused).Error)
		require.Equal(t, "resume", b.ok(202, "POST", path+"/"+rid+"/resume", "")["control"])
		s := b.ok(202, "POST", path+"/"+rid+"/stop", "")
		require.Equal(t, "stop", s["control"])
		require.Equal(t, "paused", s["status"], "the engine moves it; the API only asks")
		b.fails(404, "", "does not exist", "POST", path+"/999/pause", "")
		b.fails(404, "", "does not exist", "POST", path+"/999/resume", "")
		b.fails(404, "", "does not exist", "POST", path+"/999/stop", "")
		require.Len(t, items(b.ok(200, "GET", path+"/"+rid+"/logs", "")), 5, "every request is in the job's log")

		// Filters.
		require.Len(t, items(b.ok(200, "GET", path+"?status=canceled", "")), 1)
		require.Len(t, items(b.ok(200, "GET", path+"?job_definition_id="+def, "")), 2)
		require.Empty(t, items(b.ok(200, "GET", path+"?schedule_id=5", "")))
		require.Len(t, items(b.ok(200, "GET", path+"?since=2030-12-31T00:00:00Z", "")), 1)
		require.Len(t, items(b.ok(200, "GET", path+"?until=2030-12-31T00:00:00Z", "")), 1)
		b.fails(400, "status", "unknown status", "GET", path+"?status=done", "")
		b.fails(400, "since", "RFC 3339", "GET", path+"?since=yesterday", "")
		b.fails(400, "until", "after since", "GET", path+"?since=2030-01-02T00:00:00Z&until=2030-01-01T00:00:00Z", "")
		b.fails(400, "schedule_id", "positive integer", "GET", path+"?schedule_id=x", "")
		b.fails(400, "limit", "from 1 to 500", "GET", path+"?limit=501", "")
		b.fails(400, "cursor", "not one this API returned", "GET", path+"?cursor=!!", "")
		b.fails(400, "status", "given 2 times", "GET", path+"?status=failed&status=pending", "")
	})
}

// TestPagination walks every list with a small page and checks that each
// item comes exactly once, newest first.
func TestPagination(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		defID := b.definition("d0")
		const n = 23
		jobs := make([]models.Job, n)
		for i := range jobs {
			at := store.DBTime(time.Now())
			jobs[i] = models.Job{JobDefinitionID: defID, ScheduledAt: at, RunAt: at, Status: models.JobSucceeded, MaxAttempts: 1}
		}
		require.NoError(t, st.DB().Create(&jobs).Error)
		for i := 1; i < 7; i++ {
			b.definition("d" + itoa(int64(i)))
			b.ok(201, "POST", "/api/v1/schedules", `{"name":"s`+itoa(int64(i))+`","job_definition_id":`+itoa(defID)+`,"schedule_type":"cron","cron_expr":"@hourly"}`)
		}
		for _, c := range []struct {
			path  string
			total int
		}{{"/api/v1/jobs", n}, {"/api/v1/definitions", 7}, {"/api/v1/schedules", 6}} {
			seen := map[int64]bool{}
			last := int64(1 << 62)
			cursor := ""
			pages := 0
			for {
				url := c.path + "?limit=5"
				if cursor != "" {
					url += "&cursor=" + cursor
				}
				page := b.ok(200, "GET", url, "")
				pages++
				for _, it := range items(page) {
					i := id(it.(map[string]any))
					require.Less(t, i, last, "newest first")
					require.False(t, seen[i], "item %d twice", i)
					seen[i], last = true, i
				}
				cursor = page["next_cursor"].(string)
				if cursor == "" {
					break
				}
			}
			require.Len(t, seen, c.total, c.path)
			require.Equal(t, (c.total+4)/5, pages, c.path)
		}
		// A limit of exactly the total leaves no next page.
		require.Empty(t, b.ok(200, "GET", "/api/v1/jobs?limit=23", "")["next_cursor"])
	})
}

func TestResetJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const path = "/api/v1/jobs"
		def := itoa(b.definition("report"))
		j := b.ok(201, "POST", path, `{"job_definition_id":`+def+`}`)
		jid := itoa(id(j))
		added := b.added

		// Stuck running on a node that is gone: reset puts it back to pending.
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", id(j)).
			Updates(map[string]any{"status": models.JobRunning, "node_id": "gone", "attempt": 1}).Error)
		got := b.ok(200, "POST", path+"/"+jid+"/reset", "")
		require.Equal(t, "pending", got["status"])
		require.Equal(t, "", got["node_id"])
		require.Equal(t, added+1, b.added, "a reset job is due: the task engine is woken")
		require.Equal(t, "pending", b.ok(200, "POST", path+"/"+jid+"/reset", "")["status"], "pending stays pending")

		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", id(j)).Update("status", models.JobSucceeded).Error)
		b.fails(409, "", "", "POST", path+"/"+jid+"/reset", "")
		b.fails(404, "", "does not exist", "POST", path+"/999/reset", "")
	})
}

// TestResetLiveJobRefused is finding 4 of the hardening issue: a reset of a
// job whose node is alive and beating left the old process running beside
// attempt n+1, with no way to stop it. Reset is for a job no node looks
// after; force first asks the running attempt to stop.
func TestResetLiveJobRefused(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setupWith(t, st, func(c *Config) { c.FailoverAfter = 20 * time.Second; c.ForceResetWait = 50 * time.Millisecond })
		const path = "/api/v1/jobs"
		def := itoa(b.definition("report"))
		jid := id(b.ok(201, "POST", path, `{"job_definition_id":`+def+`}`))
		reset := path + "/" + itoa(jid) + "/reset"
		now := store.DBTime(time.Now())
		old := store.DBTime(time.Now().Add(-time.Hour))
		require.NoError(t, st.DB().Create(&models.Node{ID: "n1", Hostname: "h", PID: 7, StartedAt: now, HeartbeatAt: now, Status: "alive"}).Error)
		running := func(job map[string]any) {
			t.Helper()
			require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", jid).Updates(job).Error)
		}
		running(map[string]any{"status": models.JobRunning, "node_id": "n1", "attempt": 1, "started_at": now, "heartbeat_at": now})

		b.fails(409, "", "node n1", "POST", reset, "")
		b.fails(409, "", "force", "POST", reset+"?force=false", "")
		got := b.ok(200, "GET", path+"/"+itoa(jid), "")
		require.Equal(t, "running", got["status"], "a refused reset changes nothing")
		require.Equal(t, "", got["control"])
		b.fails(400, "force", "true or false", "POST", reset+"?force=maybe", "")
		b.fails(400, "x", "unknown query parameter", "POST", reset+"?x=1", "")

		// Queued on a live node that just took it: live too.
		running(map[string]any{"status": models.JobQueued, "queued_at": now, "heartbeat_at": nil, "started_at": nil})
		b.fails(409, "", "node n1", "POST", reset, "")

		// The node is dead, or silent for longer than the failover window.
		running(map[string]any{"status": models.JobRunning, "heartbeat_at": now, "started_at": now})
		require.NoError(t, st.DB().Model(&models.Node{}).Where("id = ?", "n1").Update("status", "dead").Error)
		require.Equal(t, "pending", b.ok(200, "POST", reset, "")["status"])
		require.NoError(t, st.DB().Model(&models.Node{}).Where("id = ?", "n1").Updates(map[string]any{"status": "alive", "heartbeat_at": old}).Error)
		running(map[string]any{"status": models.JobRunning, "node_id": "n1", "heartbeat_at": now, "started_at": now})
		require.Equal(t, "pending", b.ok(200, "POST", reset, "")["status"])

		// The node beats but this job's heartbeat stopped (the engine lost it).
		require.NoError(t, st.DB().Model(&models.Node{}).Where("id = ?", "n1").Update("heartbeat_at", now).Error)
		running(map[string]any{"status": models.JobRunning, "node_id": "n1", "heartbeat_at": now, "started_at": now})
		b.fails(409, "", "node n1", "POST", reset, "")
		running(map[string]any{"heartbeat_at": old, "started_at": old, "updated_at": old})
		require.Equal(t, "pending", b.ok(200, "POST", reset, "")["status"])

		// Force on a live job: stop is asked first; nobody acts on it here,
		// so after the wait the job is reset anyway, with control cleared so
		// the stop does not hit the next attempt.
		running(map[string]any{"status": models.JobRunning, "node_id": "n1", "heartbeat_at": now, "started_at": now})
		got = b.ok(200, "POST", reset+"?force=true", "")
		require.Equal(t, "pending", got["status"])
		require.Equal(t, "", got["control"])
		logs := b.ok(200, "GET", path+"/"+itoa(jid)+"/logs?limit=500", "")
		var msgs []string
		for _, l := range items(logs) {
			msgs = append(msgs, l.(map[string]any)["message"].(string))
		}
		require.Contains(t, strings.Join(msgs, "\n"), "stop requested")
		require.Contains(t, msgs[len(msgs)-1], "reset to pending")

		// Force where the node does act: the job ends stopped, and is
		// answered as it is, not reset.
		running(map[string]any{"status": models.JobRunning, "node_id": "n1", "heartbeat_at": now, "started_at": now})
		engine := make(chan error, 1)
		go func() {
			// Polls like a task engine's control loop would; the deadline
			// only bounds a broken run.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				var j models.Job
				if err := st.DB().First(&j, jid).Error; err != nil {
					engine <- err
					return
				}
				if j.Control == models.ControlStop {
					engine <- st.DB().Model(&models.Job{}).Where("id = ?", jid).
						Updates(map[string]any{"status": models.JobStopped, "control": "", "finished_at": store.DBTime(time.Now())}).Error
					return
				}
				time.Sleep(5 * time.Millisecond) // the control loop's poll step, which this goroutine plays
			}
			engine <- nil
		}()
		b.srv.cfg.ForceResetWait = 10 * time.Second
		got = b.ok(200, "POST", reset+"?force=true", "")
		require.NoError(t, <-engine)
		require.Equal(t, "stopped", got["status"])
	})
}

// The cursor after a succeeded job's derived last line still points after
// the last stored line: a line written after the job finished (a
// notification's, say) is listed to whoever follows, and the derived line
// is not listed to them twice. Before, the cursor was the derived line's
// id, 2^53−1, past every line ever to come.
func TestJobLogsCursorAfterTheOutcome(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1})
		now := store.DBTime(time.Now())
		require.NoError(t, st.InsertJobLogs(ctx, []models.JobLog{{JobID: j.ID, Level: "info", Message: "task line", CreatedAt: now}}))
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", j.ID).
			Updates(map[string]any{"status": models.JobSucceeded, "finished_at": now}).Error)
		path := "/api/v1/jobs/" + itoa(j.ID) + "/logs"
		messages := func(page map[string]any) []string {
			var out []string
			for _, l := range items(page) {
				out = append(out, l.(map[string]any)["message"].(string))
			}
			return out
		}

		first := b.ok(200, "GET", path, "")
		got := messages(first)
		require.Len(t, got, 2)
		require.Equal(t, "task line", got[0])
		require.Contains(t, got[1], "succeeded (attempt 1")
		require.Equal(t, float64(models.OutcomeLogID), items(first)[1].(map[string]any)["id"])

		require.NoError(t, st.InsertJobLogs(ctx, []models.JobLog{{JobID: j.ID, Level: "info", Message: "written after the end", CreatedAt: now}}))
		late := b.ok(200, "GET", path+"?cursor="+first["next_cursor"].(string), "")
		require.Equal(t, []string{"written after the end"}, messages(late))
		again := b.ok(200, "GET", path+"?cursor="+late["next_cursor"].(string), "")
		require.Empty(t, items(again))
		require.Equal(t, late["next_cursor"], again["next_cursor"], "an empty poll keeps the cursor")

		// Page by page, one line a page: the same lines, each once.
		var all []string
		cursor := ""
		for range 5 {
			q := path + "?limit=1"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			page := b.ok(200, "GET", q, "")
			if len(items(page)) == 0 {
				break
			}
			all = append(all, messages(page)...)
			cursor = page["next_cursor"].(string)
		}
		require.Len(t, all, 3)
		require.Equal(t, []string{"task line", "written after the end"}, []string{all[0], all[1]})
		require.Contains(t, all[2], "succeeded (attempt 1")
	})
}
