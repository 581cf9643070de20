package scheduleengine

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The benchmarks below are whole-engine scenarios on MariaDB with the real
// clock: the gocron alarm, the run loop, the writers and the commits. Each
// iteration is one scenario on a fresh database; run them with
// -benchtime=1x (see docs/benchmarks.md).

// fireKey names one fire.
type fireKey struct {
	id int64
	at time.Time
}

// recordingStore notes when each fire's transaction committed.
type recordingStore struct {
	*store.Store
	mu         sync.Mutex
	commits    map[fireKey]time.Time
	catchUps   int
	duplicates int
	firstAny   time.Time // first commit that wrote a job
	firstOn    time.Time // first commit that wrote an on-time (not catch-up) job
}

func newRecordingStore(st *store.Store) *recordingStore {
	return &recordingStore{Store: st, commits: map[fireKey]time.Time{}}
}

func (r *recordingStore) WriteFires(ctx context.Context, p *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	res, err := r.Store.WriteFires(ctx, p)
	if err != nil {
		return res, err
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.duplicates += res.Duplicates
	for _, j := range p.Jobs {
		k := fireKey{j.ScheduleID, j.ScheduledAt.UTC()}
		if _, ok := r.commits[k]; !ok {
			r.commits[k] = now
		}
		if r.firstAny.IsZero() {
			r.firstAny = now
		}
		if j.CatchUp {
			r.catchUps++
		} else if r.firstOn.IsZero() {
			r.firstOn = now
		}
	}
	return res, nil
}

func (r *recordingStore) snapshot() (map[fireKey]time.Time, int, int, time.Time, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.commits), r.catchUps, r.duplicates, r.firstAny, r.firstOn
}

func benchStore(b *testing.B) *store.Store {
	b.Helper()
	if os.Getenv(testdb.EnvDSN) == "" {
		b.Skipf("%s not set: the schedule engine benchmarks run on MariaDB/MySQL", testdb.EnvDSN)
	}
	return testdb.Open(b, store.MySQL)
}

func benchEngine(b *testing.B, st Store) *Engine {
	b.Helper()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	e, err := New(st, &Config{NodeID: "bench", Leadership: leading(), Logger: log, BatchSize: benchBatch()})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func benchDefinition(b *testing.B, st *store.Store) int64 {
	b.Helper()
	def := models.JobDefinition{Name: "bench", TaskType: "sleep", NotifyOn: models.NotifyNever, MaxAttempts: 1}
	if err := st.DB().Create(&def).Error; err != nil {
		b.Fatal(err)
	}
	return def.ID
}

// insertRows writes rows with multi-row INSERTs of 1,000; row(i) returns
// the VALUES tuple's arguments.
func insertRows(b *testing.B, st *store.Store, head string, n int, row func(i int) []any) {
	b.Helper()
	cols := strings.Count(head, ",") + 1
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	for lo := 0; lo < n; lo += 1000 {
		hi := min(lo+1000, n)
		args := make([]any, 0, (hi-lo)*cols)
		tuples := make([]string, 0, hi-lo)
		for i := lo; i < hi; i++ {
			args = append(args, row(i)...)
			tuples = append(tuples, tuple)
		}
		q := "INSERT INTO " + head + " VALUES " + strings.Join(tuples, ",")
		if _, err := st.SQL().ExecContext(b.Context(), q, args...); err != nil {
			b.Fatal(err)
		}
	}
}

// waitFor polls cond; a benchmark may poll, a test may not.
func waitFor(b *testing.B, what string, limit time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline
	}
}

func stopEngine(b *testing.B, e *Engine) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOnceHerd is (a): 10,000 once schedules due in the same second.
// Metric: ms from the due time until the last fire committed.
func BenchmarkOnceHerd(b *testing.B) {
	const n = 10_000
	for range b.N {
		st := benchStore(b)
		def := benchDefinition(b, st)
		due := time.Now().UTC().Truncate(time.Second).Add(4 * time.Second)
		now := store.DBTime(time.Now())
		insertRows(b, st, "schedules (name, job_definition_id, schedule_type, run_at, created_at, updated_at)", n, func(i int) []any {
			return []any{"once-" + strconv.Itoa(i), def, "once", due, now, now}
		})
		rec := newRecordingStore(st)
		e := benchEngine(b, rec)
		if err := e.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "every once fire", time.Until(due)+30*time.Second, func() bool {
			c, _, _, _, _ := rec.snapshot()
			return len(c) == n
		})
		stopEngine(b, e)
		commits, catchUps, dups, _, _ := rec.snapshot()
		var last time.Time
		for k, c := range commits {
			if !k.at.Equal(due) {
				b.Fatalf("fire of schedule %d has scheduled_at %s, want %s", k.id, k.at, due)
			}
			if c.After(last) {
				last = c
			}
		}
		if catchUps != 0 || dups != 0 {
			b.Fatalf("%d catch-ups and %d duplicates, want none", catchUps, dups)
		}
		var firstC time.Time
		distinct := map[time.Time]int{}
		for _, c := range commits {
			if firstC.IsZero() || c.Before(firstC) {
				firstC = c
			}
			distinct[c]++
		}
		b.ReportMetric(float64(firstC.Sub(due).Microseconds())/1000, "ms-due-to-first-commit")
		b.ReportMetric(float64(len(distinct)), "commits")
		b.ReportMetric(float64(last.Sub(due).Microseconds())/1000, "ms-due-to-last-commit")
	}
}

// benchSeconds is CHIME_BENCH_SECONDS, default 60.
func benchSeconds(b *testing.B) int {
	v := os.Getenv("CHIME_BENCH_SECONDS")
	if v == "" {
		return 60
	}
	seconds, err := strconv.Atoi(v)
	if err != nil || seconds < 1 {
		b.Fatalf("CHIME_BENCH_SECONDS=%q: want a positive integer", v)
	}
	return seconds
}

// BenchmarkEverySecond is (b): 1,000 schedules firing every second for
// CHIME_BENCH_SECONDS (default 60). Metrics: p50/p99 of commit time minus
// scheduled_at; missed and duplicate fires, which must be zero.
func BenchmarkEverySecond(b *testing.B) {
	const n = 1000
	seconds := benchSeconds(b)
	for range b.N {
		st := benchStore(b)
		def := benchDefinition(b, st)
		now := store.DBTime(time.Now())
		insertRows(b, st, "schedules (name, job_definition_id, schedule_type, cron_expr, created_at, updated_at)", n, func(i int) []any {
			return []any{"sec-" + strconv.Itoa(i), def, "cron", "* * * * * *", now, now}
		})
		rec := newRecordingStore(st)
		e := benchEngine(b, rec)
		if err := e.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		// The window starts once start-up is over, and ends a second before
		// the engine stops, so every fire in it had its chance.
		from := time.Now().UTC().Truncate(time.Second).Add(3 * time.Second)
		to := from.Add(time.Duration(seconds) * time.Second)
		// A benchmark over a real-time window of a real database: the
		// engine runs on the real clock until the window has passed.
		time.Sleep(time.Until(to.Add(1500 * time.Millisecond)))
		stopEngine(b, e)
		commits, catchUps, dups, _, _ := rec.snapshot()

		var lat []time.Duration
		perSchedule := map[int64]int{}
		for k, c := range commits {
			if k.at.Before(from) || !k.at.Before(to) {
				continue
			}
			perSchedule[k.id]++
			lat = append(lat, c.Sub(k.at))
		}
		// Count what the database holds too: a fire written twice would be
		// a second row only without the unique key, so compare both.
		var rows int64
		if err := st.DB().Model(&models.Job{}).Where("scheduled_at >= ? AND scheduled_at < ?", from, to).Count(&rows).Error; err != nil {
			b.Fatal(err)
		}
		missed := 0
		var ids []int64
		if err := st.DB().Model(&models.Schedule{}).Pluck("id", &ids).Error; err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			missed += max(seconds-perSchedule[id], 0)
		}
		want := n * seconds
		if os.Getenv("CHIME_BENCH_PER_SECOND") != "" {
			// Where the tail comes from: the slowest fire of each second.
			worst := map[time.Time]time.Duration{}
			for k, c := range commits {
				if !k.at.Before(from) && k.at.Before(to) {
					worst[k.at] = max(worst[k.at], c.Sub(k.at))
				}
			}
			for s := from; s.Before(to); s = s.Add(time.Second) {
				b.Logf("%s worst %v", s.Format("15:04:05"), worst[s].Round(time.Millisecond))
			}
		}
		slices.Sort(lat)
		pct := func(p float64) float64 {
			if len(lat) == 0 {
				return 0
			}
			return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(missed), "missed")
		b.ReportMetric(float64(int(rows)-len(lat)+dups), "duplicates")
		b.ReportMetric(float64(catchUps), "catch-ups")
		if missed != 0 || int(rows) != want || len(lat) != want {
			b.Errorf("%d fires recorded and %d rows in the window, want %d; %d missed", len(lat), rows, want, missed)
		}
	}
}

// BenchmarkStartup100k is (c): start-up with 100,000 active schedules that
// a previous leader was firing. Metrics: seconds from Start until the first
// fire is committed (the restore's catch-ups) and until the first on-time
// fire timed by gocron is; the process's peak RSS (VmHWM).
func BenchmarkStartup100k(b *testing.B) {
	const n = 100_000
	for range b.N {
		st := benchStore(b)
		def := benchDefinition(b, st)
		now := store.DBTime(time.Now())
		// Hourly, spread over the hour's 3,600 seconds: about 28 fires a
		// second once running.
		insertRows(b, st, "schedules (name, job_definition_id, schedule_type, cron_expr, created_at, updated_at)", n, func(i int) []any {
			return []any{"s-" + strconv.Itoa(i), def, "cron", fmt.Sprintf("%d %d * * * *", i%60, (i/60)%60), now, now}
		})
		var first int64
		if err := st.DB().Model(&models.Schedule{}).Select("MIN(id)").Scan(&first).Error; err != nil {
			b.Fatal(err)
		}
		insertRows(b, st, "time_triggers (schedule_id, last_fire_at, fired_count, created_at, updated_at)", n, func(i int) []any {
			return []any{first + int64(i), now, 1, now, now}
		})
		hwmBefore := procStatus(b, "VmHWM")
		rec := newRecordingStore(st)
		e := benchEngine(b, rec)
		start := time.Now()
		if err := e.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "an on-time fire", 2*time.Minute, func() bool {
			_, _, _, _, on := rec.snapshot()
			return !on.IsZero()
		})
		_, catchUps, _, firstAny, firstOn := rec.snapshot()
		stopEngine(b, e)
		b.ReportMetric(firstAny.Sub(start).Seconds(), "s-to-first-fire")
		b.ReportMetric(firstOn.Sub(start).Seconds(), "s-to-first-ontime-fire")
		b.ReportMetric(float64(catchUps), "catch-ups")
		b.ReportMetric(float64(procStatus(b, "VmHWM"))/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(hwmBefore)/1024, "RSS-before-start-MiB")
	}
}

// procStatus reads a kB field of /proc/self/status.
func procStatus(b *testing.B, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return v
		}
	}
	b.Fatalf("%s not in /proc/self/status", field)
	return 0
}

func benchBatch() int {
	n, _ := strconv.Atoi(os.Getenv("CHIME_BENCH_BATCH"))
	return n
}
