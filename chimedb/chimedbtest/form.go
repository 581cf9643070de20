package chimedbtest

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// formMethods are the suites of properties every write path shares: the
// time form (chimedb.DBTime) and the caps on task text (chimedb.Storable).
func formMethods() []method {
	return []method{
		{"TimeForm", timeFormCases},
		{"ColumnCaps", columnCapsCases},
	}
}

// east and west are zones far from UTC either way: a store that wrote a
// time's wall clock instead of its instant would move it by hours.
var (
	east = time.FixedZone("UTC+14", 14*3600)
	west = time.FixedZone("UTC-12", -12*3600)
)

// odd is an instant with nanoseconds, in a zone that is not UTC.
func odd(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 123456789, time.UTC).In(east)
}

var timeFormCases = []tcase{
	{"every write path keeps an instant in any zone as UTC to the microsecond", func(e *env) {
		d := e.definition()
		now := e.now()
		at := odd(now.Add(-time.Hour))
		paths := []struct {
			name  string
			write func() time.Time // writes at and reads it back
		}{
			{"InsertJob scheduled_at and run_at", func() time.Time {
				j := e.job(d.ID, runAt(at))
				got := e.get(j.ID)
				sameInstant(e.t, at, got.RunAt)
				return got.ScheduledAt
			}},
			{"CreateSchedule start_at, end_at and run_at", func() time.Time {
				s := e.schedule(d.ID, func(s *models.Schedule) { s.StartAt, s.EndAt, s.RunAt = &at, &at, &at })
				got := e.getSchedule(s.ID)
				sameInstant(e.t, at, *got.StartAt)
				sameInstant(e.t, at, *got.EndAt)
				return *got.RunAt
			}},
			{"WriteFires scheduled_at and the trigger's times", func() time.Time {
				s := e.schedule(d.ID)
				j, tr := fire(s, at, nil)
				tr.NextFireAt = &at
				e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j}, Triggers: []chimedb.TriggerRow{tr}, Now: at})
				sameInstant(e.t, at, *e.trigger(s.ID).NextFireAt)
				sameInstant(e.t, at, *e.trigger(s.ID).LastFireAt)
				return e.scheduleJobs(s.ID)[0].ScheduledAt
			}},
			{"EnsureTriggers", func() time.Time {
				s := e.schedule(d.ID)
				require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: at,
					Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID, NextFireAt: &at, LastFireAt: &at, SpecChangedAt: &at}}}))
				sameInstant(e.t, at, *e.trigger(s.ID).LastFireAt)
				sameInstant(e.t, at, *e.trigger(s.ID).SpecChangedAt)
				return *e.trigger(s.ID).NextFireAt
			}},
			{"ClaimJobs queued_at", func() time.Time {
				j := e.job(d.ID, runAt(now.Add(-2*time.Hour)))
				e.claim(&chimedb.ClaimParams{Now: at, Limit: 1})
				return *e.get(j.ID).QueuedAt
			}},
			{"StartJobs started_at and HeartbeatJobs heartbeat_at", func() time.Time {
				j := e.queued(d.ID, "form", 0)
				_, err := e.Task.StartJobs(e.ctx, &chimedb.StartJobsParams{NodeID: "form", Now: at, Jobs: []chimedb.StartJob{{ID: j.ID}}})
				require.NoError(e.t, err)
				sameInstant(e.t, at, *e.get(j.ID).StartedAt)
				_, err = e.Task.HeartbeatJobs(e.ctx, "form", at)
				require.NoError(e.t, err)
				return *e.get(j.ID).HeartbeatAt
			}},
			{"CompleteJobs finished_at and a retry's run_at", func() time.Time {
				done, retry := e.running(d.ID, "form2", 1), e.running(d.ID, "form2", 1)
				e.complete("form2", chimedb.JobOutcome{ID: done.ID, Status: models.JobSucceeded, FinishedAt: at},
					chimedb.JobOutcome{ID: retry.ID, Status: models.JobPending, RunAt: at})
				sameInstant(e.t, at, e.get(retry.ID).RunAt)
				return *e.get(done.ID).FinishedAt
			}},
			{"InsertJobLogs created_at", func() time.Time {
				j := e.job(d.ID)
				require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, []models.JobLog{{JobID: j.ID, Message: "form", CreatedAt: at}}))
				for _, l := range e.logs(j.ID) {
					if l.Message == "form" {
						return l.CreatedAt
					}
				}
				require.FailNow(e.t, "line not written")
				return time.Time{}
			}},
			{"CancelStopRequested finished_at", func() time.Time {
				j := e.job(d.ID)
				e.setJob(j.ID, jobState{control: models.ControlStop})
				_, err := e.Task.CancelStopRequested(e.ctx, at)
				require.NoError(e.t, err)
				return *e.get(j.ID).FinishedAt
			}},
		}
		for _, p := range paths {
			got := p.write()
			sameInstant(e.t, at, got, p.name)
			require.Equal(e.t, int64(at.Nanosecond()/1000), int64(got.Nanosecond()/1000), "%s: microseconds kept", p.name)
			require.Zero(e.t, got.Nanosecond()%1000, "%s: no finer than a microsecond", p.name)
		}
	}},
	{"the database compares instants, whatever zone a time was written in", func(e *env) {
		d := e.definition()
		now := e.now()
		// A minute ago, written in a zone whose wall clock reads 14 hours
		// later; a minute ahead, in one whose wall clock reads 12 hours
		// earlier.
		due := e.job(d.ID, runAt(now.Add(-time.Minute).In(east)))
		notYet := e.job(d.ID, runAt(now.Add(time.Minute).In(west)))
		res := e.claim(&chimedb.ClaimParams{Now: now.In(west), Limit: 10})
		require.Equal(e.t, []int64{due.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, models.JobPending, e.get(notYet.ID).Status)
		got := listed(e.t, e.jobListIDs, chimedb.AdminListParams{Since: now.In(east)})
		require.Equal(e.t, []int64{notYet.ID}, got, "Since in another zone")
		got = listed(e.t, e.jobListIDs, chimedb.AdminListParams{Until: now.In(west)})
		require.Equal(e.t, []int64{due.ID}, got, "Until in another zone")
	}},
}

// capped fails unless got is in as a column of maxBytes stores it: made
// storable (chimedb.Storable), where a NUL byte may have become U+FFFD
// (PostgreSQL refuses NUL in text).
func capped(e *env, in, got string, maxBytes int, what string) {
	e.t.Helper()
	require.True(e.t, utf8.ValidString(got), "%s: valid UTF-8", what)
	require.LessOrEqual(e.t, len(got), maxBytes, "%s: within the cap", what)
	want := chimedb.Storable(in, maxBytes)
	noNUL := chimedb.Storable(strings.ReplaceAll(in, "\x00", "\uFFFD"), maxBytes)
	if got != want && got != noNUL {
		require.Failf(e.t, "not stored as Storable makes it", "%s: %d bytes stored, %d wanted; stored begins %q",
			what, len(got), len(want), got[:min(len(got), 60)])
	}
}

var columnCapsCases = []tcase{
	{"CompleteJobs stores results and errors of any size and bytes", func(e *env) {
		d := e.definition()
		texts := []struct {
			name   string
			result string
			err    string
		}{
			{"over the caps", strings.Repeat("r", chimedb.MaxResultBytes+10), strings.Repeat("é", chimedb.MaxErrorBytes)},
			{"invalid UTF-8 and NUL", "ok \xff\xfe and \x00 end", "bad \xc3 and \x00"},
			{"four-byte runes across the cap", strings.Repeat("😀", chimedb.MaxResultBytes/4+1), strings.Repeat("😀", chimedb.MaxErrorBytes/4+1)},
		}
		var outs []chimedb.JobOutcome
		var ids []int64
		for _, tx := range texts {
			j := e.running(d.ID, "n1", 1)
			outs = append(outs, chimedb.JobOutcome{ID: j.ID, Status: models.JobFailed, FinishedAt: e.now(), Result: ptr(tx.result), Error: ptr(tx.err)})
			ids = append(ids, j.ID)
		}
		require.ElementsMatch(e.t, ids, e.complete("n1", outs...))
		for i, tx := range texts {
			got := e.get(ids[i])
			require.Equal(e.t, models.JobFailed, got.Status, tx.name)
			capped(e, tx.result, *got.Result, chimedb.MaxResultBytes, tx.name+": result")
			capped(e, tx.err, *got.Error, chimedb.MaxErrorBytes, tx.name+": error")
		}
	}},
	{"InsertJobLogs stores messages and levels of any size and bytes", func(e *env) {
		d := e.definition()
		j := e.job(d.ID)
		lines := []models.JobLog{
			{JobID: j.ID, Level: "info", Message: "m1 " + strings.Repeat("x", chimedb.MaxLogMessageBytes)},
			{JobID: j.ID, Level: strings.Repeat("level", 10), Message: "m2 long level"},
			{JobID: j.ID, Level: "warn\xff", Message: "m3 \xff\x00 bytes"},
		}
		require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, lines))
		got := map[string]models.JobLog{}
		for _, l := range e.logs(j.ID) {
			if len(l.Message) > 2 && l.Message[0] == 'm' {
				got[l.Message[:2]] = l
			}
		}
		require.Len(e.t, got, len(lines))
		for _, in := range lines {
			out := got[in.Message[:2]]
			capped(e, in.Message, out.Message, chimedb.MaxLogMessageBytes, in.Message[:2]+": message")
			capped(e, in.Level, out.Level, chimedb.MaxLogLevelBytes, in.Message[:2]+": level")
		}
	}},
}
