package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// pausedHourly writes a paused hourly schedule of defID, anchored at
// start and last fired there, as the engine leaves it: resuming it at
// start+10h30m catches up start+1h … start+10h.
func pausedHourly(t *testing.T, st *store.Store, defID int64, name string, start time.Time) int64 {
	t.Helper()
	db := st.DB()
	at := store.DBTime(start)
	require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, start_at, timezone,
		misfire_policy, concurrency, status, status_reason, created_at, updated_at)
		VALUES (?, ?, 'interval', 3600, ?, 'UTC', 'fire_once', 'allow', 'paused', '', ?, ?)`, name, defID, at, at, at).Error)
	var id int64
	require.NoError(t, db.Raw(`SELECT id FROM schedules WHERE name = ?`, name).Scan(&id).Error)
	require.NoError(t, db.Exec(`INSERT INTO time_triggers (schedule_id, last_fire_at, fired_count, misfired_count, spec_hash,
		created_at, updated_at) VALUES (?, ?, 1, 0, '', ?, ?)`, id, at, at, at).Error)
	return id
}

// A paused schedule's page says what resuming it now writes: one
// catch-up job at once, for which instant, collapsing how many missed
// fires, then the next fire times.
func TestPausedSchedulePageSaysTheCatchUp(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, active := seed(t, st, "nightly")
		start := time.Now().UTC().Truncate(time.Second).Add(-10*time.Hour - 30*time.Minute)
		id := pausedHourly(t, st, defID, "hourly-paused", start)
		c := s.client()
		s.login(c)
		_, body := s.get(c, "/schedules/"+itoa(id))
		require.Contains(t, body, `id="resume-catch-up"`)
		latest := start.Add(10 * time.Hour).Format(time.RFC3339)
		require.Regexp(t, `(?s)id="resume-catch-up">Resuming now writes <strong>one catch-up job</strong> at once, for <time datetime="`+
			regexp.QuoteMeta(latest)+`"[^>]*>[^<]*</time>, collapsing <strong>10 missed fires</strong>; then it fires at the times below\.`, body)
		require.NotContains(t, body, "these are the times it would fire once resumed")
		_, body = s.get(c, "/schedules/"+itoa(active))
		require.NotContains(t, body, "resume-catch-up", "an active schedule has nothing to catch up")
	})
}

// The login page names the token file the server uses, never the token.
func TestLoginHintNamesTheTokenFile(t *testing.T) {
	st := testdb.Open(t, store.SQLite)
	const file = "/srv/chime/conf/api.token"
	s := newSiteWith(t, st, testToken, file)
	_, body := s.get(s.client(), "/login")
	require.Contains(t, body, "<code>"+file+"</code>")
	require.NotContains(t, body, testToken)
	// A token set in the configuration has no file to name.
	s = newSite(t, st, testToken)
	_, body = s.get(s.client(), "/login")
	require.NotContains(t, body, "token file")
	require.Contains(t, body, "CHIME_API_TOKEN")
}

// A definition has a page of its own: its fields, its params with secrets
// masked, its schedules and recent jobs, and links; the pages that list
// definitions link to it.
func TestDefinitionPage(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, schID := seed(t, st, "nightly")
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET default_params = ?, description = 'makes the report' WHERE id = ?`,
			`{"duration": "10ms", "env": {"DB_PASSWORD": "hunter2", "MODE": "fast"}, "url": "https://bob:s3cret@example.com/x", "api_token": "tok-123"}`,
			defID).Error)
		j := &models.Job{ScheduleID: &schID, JobDefinitionID: defID, ScheduledAt: time.Now(), RunAt: time.Now(), MaxAttempts: 1}
		require.NoError(t, st.Admin().InsertJob(context.Background(), j, "hello"))
		c := s.client()
		s.login(c)
		resp, body := s.get(c, "/definitions/"+itoa(defID))
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		for _, want := range []string{"nightly-def", "makes the report", "<code>sleep</code>", q(`"MODE": "fast"`),
			`href="/schedules/` + itoa(schID) + `">nightly</a>`, `href="/jobs/` + itoa(j.ID) + `"`,
			`href="/definitions/` + itoa(defID) + `/edit"`, `href="/definitions/` + itoa(defID) + `/delete"`,
			`href="/schedules/new?definition=` + itoa(defID) + `"`, `href="/jobs?definition=` + itoa(defID) + `"`} {
			require.Contains(t, body, want)
		}
		for _, secret := range []string{"hunter2", "s3cret", "tok-123"} {
			require.NotContains(t, body, secret)
		}
		require.Contains(t, body, q(`"DB_PASSWORD": "********"`))
		require.Contains(t, body, `https://bob:xxxxx@example.com/x`)

		resp, _ = s.get(c, "/definitions/999999")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		link := `href="/definitions/` + itoa(defID) + `"`
		for _, p := range []string{"/definitions", "/schedules", "/schedules/" + itoa(schID), "/jobs", "/jobs/" + itoa(j.ID)} {
			_, body := s.get(c, p)
			require.Contains(t, body, link, p)
		}
	})
}

// The new-schedule preview shows no error before anything is chosen: a
// neutral hint until a definition is picked.
func TestSchedulePreviewWaitsForADefinition(t *testing.T) {
	st := testdb.Open(t, store.SQLite)
	s := newSite(t, st, testToken)
	seed(t, st, "nightly")
	c := s.client()
	csrf := s.login(c)
	_, body := s.post(c, "/schedules/preview", url.Values{"csrf": {csrf}, "name": {""}, "job_definition_id": {""}, "schedule_type": {"cron"},
		"cron_expr": {""}, "timezone": {"UTC"}, "misfire_policy": {"fire_once"}, "concurrency": {"allow"}, "status": {"active"}})
	require.NotContains(t, body, `"error"`)
	require.NotContains(t, body, "job_definition_id is required")
	require.Contains(t, body, `"hint":"Choose a job definition`)
}

// jobIn writes a job of defID in status on node, last heard from at seen.
func jobIn(t *testing.T, st *store.Store, defID int64, status models.JobStatus, control models.JobControl, node string, seen time.Time) int64 {
	t.Helper()
	now := time.Now()
	j := &models.Job{JobDefinitionID: defID, ScheduledAt: now, RunAt: now, MaxAttempts: 1}
	require.NoError(t, st.Admin().InsertJob(context.Background(), j, "test"))
	at := store.DBTime(seen)
	set := map[string]any{"status": status, "control": control, "node_id": node, "queued_at": at, "updated_at": at}
	if status == models.JobRunning || status == models.JobPaused {
		set["started_at"], set["heartbeat_at"] = at, at
	}
	if status.Finished() {
		set["finished_at"] = at
	}
	require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", j.ID).Updates(set).Error)
	return j.ID
}

// q is s as html/template writes it in text: quotes as &#34;.
func q(s string) string { return strings.ReplaceAll(s, `"`, "&#34;") }

var actionRe = regexp.MustCompile(`action="/jobs/\d+/([a-z]+)"`)

// actions lists the job actions a job page offers, force as "force".
func actions(body string) []string {
	var out []string
	for _, m := range actionRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	if strings.Contains(body, `name="force"`) {
		out = append(out, "force")
	}
	return out
}

// A job's page offers only the actions its state allows, and the console
// refuses Run again of a job that has not finished.
func TestJobPageOffersOnlyValidActions(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		now := time.Now()
		require.NoError(t, st.DB().Exec(`INSERT INTO nodes (id, hostname, pid, version, roles, started_at, heartbeat_at, status)
			VALUES ('live-node', 'h', 1, 'test', 'worker', ?, ?, 'alive')`, store.DBTime(now), store.DBTime(now)).Error)
		old := now.Add(-time.Hour)
		cases := []struct {
			name    string
			status  models.JobStatus
			control models.JobControl
			node    string
			seen    time.Time
			want    []string
		}{
			{"running", models.JobRunning, models.ControlNone, "live-node", now, []string{"pause", "stop"}},
			{"pending", models.JobPending, models.ControlNone, "", now, []string{"stop"}},
			{"paused", models.JobPaused, models.ControlNone, "live-node", now, []string{"resume", "stop"}},
			{"pause requested", models.JobRunning, models.ControlPause, "live-node", now, []string{"resume", "stop"}},
			{"stop not acted on", models.JobRunning, models.ControlStop, "live-node", now, []string{"reset", "force"}},
			{"silent node", models.JobRunning, models.ControlNone, "gone-node", old, []string{"pause", "stop", "reset"}},
			{"succeeded", models.JobSucceeded, models.ControlNone, "live-node", now, []string{"again"}},
			{"failed", models.JobFailed, models.ControlNone, "live-node", now, []string{"again"}},
		}
		c := s.client()
		csrf := s.login(c)
		for _, tc := range cases {
			id := jobIn(t, st, defID, tc.status, tc.control, tc.node, tc.seen)
			_, body := s.get(c, "/jobs/"+itoa(id))
			require.ElementsMatch(t, tc.want, actions(body), tc.name)
		}
		running := jobIn(t, st, defID, models.JobRunning, models.ControlNone, "live-node", now)
		var before int64
		require.NoError(t, st.DB().Model(&models.Job{}).Count(&before).Error)
		resp, body := s.post(c, "/jobs/"+itoa(running)+"/again", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusConflict, resp.StatusCode, body)
		var after int64
		require.NoError(t, st.DB().Model(&models.Job{}).Count(&after).Error)
		require.Equal(t, before, after, "no second run beside the running one")
	})
}

// The console says a job's state with the CLI's and the API's words, with
// a short explanation on hover.
func TestStateWordsAreTheAPIs(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, schID := seed(t, st, "nightly")
		pending := jobIn(t, st, defID, models.JobPending, models.ControlNone, "", time.Now())
		queued := jobIn(t, st, defID, models.JobQueued, models.ControlNone, "n1", time.Now())
		c := s.client()
		s.login(c)
		for _, p := range []string{"/jobs", "/jobs/" + itoa(pending), "/jobs/" + itoa(queued), "/", "/schedules", "/schedules/" + itoa(schID)} {
			_, body := s.get(c, p)
			for _, w := range []string{"Waiting", "Queued on a node", ">Succeeded<", ">Active<"} {
				require.NotContains(t, body, w, p)
			}
		}
		_, body := s.get(c, "/jobs")
		require.Regexp(t, `<span class="badge s-pending" title="[^"]+">pending</span>`, body)
		require.Regexp(t, `<span class="badge s-queued" title="[^"]+">queued</span>`, body)
		_, body = s.get(c, "/schedules")
		require.Regexp(t, `<span class="badge s-active" title="[^"]+">active</span>`, body)
	})
}
