package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks/httpcall"
)

// httpServer is the local HTTP server the httpcall scenario's jobs call. It
// notes when each request arrived, by the schedule named in its path, and
// when each connection was accepted: the lateness a job's request really
// has is the server's to say, after everything on chime's side (the fire,
// the hand-off, the worker, the task's dial and write).
type httpServer struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	arrivals map[string][]time.Time // by schedule name
	conns    []time.Time            // when each connection was accepted
	closed   []time.Time            // when each connection closed
	done     chan error

	closeOnce sync.Once
	closeErr  error
}

func startHTTPServer() (*httpServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: local HTTP server: %w", err)
	}
	s := &httpServer{url: "http://" + ln.Addr().String(), arrivals: make(map[string][]time.Time, 1024), done: make(chan error, 1)}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st != http.StateNew && st != http.StateClosed {
				return
			}
			now := time.Now().Round(0)
			s.mu.Lock()
			if st == http.StateNew {
				s.conns = append(s.conns, now)
			} else {
				s.closed = append(s.closed, now)
			}
			s.mu.Unlock()
		},
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// serve reads the clock first: the instant compared with scheduled_at, as
// the no-op task's Execute does, without the monotonic reading.
func (s *httpServer) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now().Round(0)
	name := strings.TrimPrefix(r.URL.Path, "/s/")
	s.mu.Lock()
	s.arrivals[name] = append(s.arrivals[name], now)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// close shuts the server down once; later calls return the first's error.
func (s *httpServer) close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.closeErr = s.srv.Shutdown(ctx)
		if err := <-s.done; !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
	})
	return s.closeErr
}

// startServer starts the scenario's server, in this process or in one of
// its own, and returns its URL and the function that stops it and returns
// what it noted.
func startServer(ownProcess bool) (url string, finish func() (*serverRecord, error), err error) {
	if ownProcess {
		p, err := startProcessServer()
		if err != nil {
			return "", nil, err
		}
		return p.url, p.finish, nil
	}
	srv, err := startHTTPServer()
	if err != nil {
		return "", nil, err
	}
	return srv.url, func() (*serverRecord, error) {
		if err := srv.close(); err != nil {
			return nil, fmt.Errorf("bench: local HTTP server: %w", err)
		}
		// Shutdown returns once the connections are closed, not once
		// their goroutines have reported it: read under the lock.
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return &serverRecord{Arrivals: srv.arrivals, Conns: slices.Clone(srv.conns), Closed: slices.Clone(srv.closed)}, nil
	}, nil
}

// httpcallScenario runs o.Schedules schedules firing every second of an
// httpcall definition against a local HTTP server, each schedule calling a
// path of its own, and reports how long after each second its requests
// reached the server, and how many connections the server accepted.
func httpcallScenario(ctx context.Context, cfg *configs.Config, log *logrus.Logger, o Options) (*Line, error) {
	if o.Schedules <= 0 {
		o.Schedules = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	srvURL, finish, err := startServer(o.ServerProcess)
	if err != nil {
		return nil, err
	}
	finished := false
	defer func() {
		if !finished {
			_, _ = finish()
		}
	}()
	if err := e.db.Model(&models.JobDefinition{}).Where("id = ?", e.def).Updates(map[string]any{
		"task_type":      httpcall.Kind,
		"default_params": models.JSON(fmt.Sprintf(`{"url":%q,"timeout":"10s"}`, srvURL+"/")),
	}).Error; err != nil {
		return nil, err
	}
	if err := insertRows(e.db, "INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr, params) VALUES ",
		"(?, ?, 'cron', '* * * * * *', ?)", o.Schedules, func(i int) []any {
			name := fmt.Sprintf("bench-%05d", i)
			return []any{name, e.def, models.JSON(fmt.Sprintf(`{"url":%q}`, srvURL+"/s/"+name))}
		}); err != nil {
		return nil, fmt.Errorf("bench: insert schedules: %w", err)
	}
	gcBefore, cpuBefore := readGC(), processCPU()
	from, until, err := runWindow(ctx, e, log, o.Duration)
	if err != nil {
		return nil, err
	}
	gc, cpu := readGC().since(gcBefore), processCPU()-cpuBefore
	finished = true
	rec, err := finish()
	if err != nil {
		return nil, err
	}
	arrivals, conns, closed := rec.Arrivals, rec.Conns, rec.Closed

	var jobs []models.Job
	if err := e.db.Select("id, schedule_id, status, scheduled_at, started_at").
		Where("scheduled_at >= ? AND scheduled_at <= ?", from, until).Find(&jobs).Error; err != nil {
		return nil, err
	}
	seconds := int(until.Sub(from)/time.Second) + 1
	seen := make(map[string]bool, len(jobs))
	var started []float64
	failed := 0
	for _, j := range jobs {
		seen[fmt.Sprint(*j.ScheduleID, j.ScheduledAt.Unix())] = true
		if j.StartedAt != nil {
			started = append(started, ms(j.StartedAt.Sub(j.ScheduledAt)))
		}
		if j.Status != models.JobSucceeded {
			failed++
		}
	}
	// A request belongs to the second it arrived in: the schedules fire on
	// every whole second, and a request a whole second late would show as
	// a second request of one schedule in one second (doubled).
	var late []float64
	first := map[int64]float64{} // by second: the earliest request's lateness
	arrived, doubled, requests := 0, 0, 0
	for _, at := range arrivals {
		last := time.Time{}
		requests += len(at)
		for _, a := range at {
			due := a.UTC().Truncate(time.Second)
			if due.Before(from) || due.After(until) {
				continue
			}
			if due.Equal(last) {
				doubled++
			}
			last = due
			arrived++
			lateness := ms(a.Sub(due))
			late = append(late, lateness)
			if f, ok := first[due.Unix()]; !ok || lateness < f {
				first[due.Unix()] = lateness
			}
		}
	}
	inWindow := func(ts []time.Time) int {
		n := 0
		for _, t := range ts {
			if !t.Before(from) && t.Before(until.Add(time.Second)) {
				n++
			}
		}
		return n
	}
	a, s := percentiles(late), percentiles(started)
	l := &Line{}
	l.add("bench", "httpcall")
	l.add("driver", e.cfg.Database.Driver)
	l.add("schedules", o.Schedules)
	l.add("pool", e.cfg.TaskEngine.PoolSize)
	l.add("seconds", seconds)
	l.add("jobs", len(jobs))
	l.add("missed", o.Schedules*seconds-len(seen))
	l.add("not_succeeded", failed)
	l.add("arrived", arrived)
	l.add("doubled", doubled)
	l.add("server_conns", inWindow(conns))
	l.add("server_closed", inWindow(closed))
	l.add("start_p50_ms", s.P50)
	l.add("start_p99_ms", s.P99)
	var firsts []float64
	for _, f := range first {
		firsts = append(firsts, f)
	}
	// The herd's start: when each second's earliest request arrived.
	l.add("arrive_first_p50_ms", percentiles(firsts).P50)
	l.add("arrive_p50_ms", a.P50)
	l.add("arrive_p90_ms", a.P90)
	l.add("arrive_p99_ms", a.P99)
	l.add("arrive_max_ms", a.Max)
	if o.ServerProcess {
		l.add("server", "process")
	} else {
		l.add("server", "in_process")
	}
	// The CPU this process used over the node's whole run (warm-up and
	// stop included, the server's too when it runs here), by request the
	// server got over that run.
	l.add("cpu_s", round3(cpu.Seconds()))
	if requests > 0 {
		l.add("cpu_us_per_request", math.Round(float64(cpu.Microseconds())/float64(requests)))
	}
	l.add("gc_cycles", gc.cycles)
	l.add("gc_cpu_s", round3(gc.cpu))
	return l, nil
}

// gcReading is the Go runtime's count of GC cycles and its estimate of
// the CPU time its Ps spent in the GC (runtime/metrics: time a P was
// given, not measured CPU).
type gcReading struct {
	cycles uint64
	cpu    float64 // seconds
}

var gcSamples = []metrics.Sample{
	{Name: "/gc/cycles/total:gc-cycles"},
	{Name: "/cpu/classes/gc/total:cpu-seconds"},
}

func readGC() gcReading {
	s := slices.Clone(gcSamples)
	metrics.Read(s)
	var r gcReading
	if s[0].Value.Kind() == metrics.KindUint64 {
		r.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		r.cpu = s[1].Value.Float64()
	}
	return r
}

func (r gcReading) since(b gcReading) gcReading {
	return gcReading{cycles: r.cycles - b.cycles, cpu: r.cpu - b.cpu}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
