// Command ceiling measures the most a MariaDB/MySQL or PostgreSQL server
// gives a job queue's drain, for `chime bench drain` to be compared with.
//
// Each run makes a database of its own, migrates it with chime's
// migrations (so jobs is chime's table: its columns, its indexes,
// idx_jobs_claim_order among them), inserts -jobs pending rows as `chime
// bench drain` does, drops the UPDATE triggers of jobs (unless -triggers),
// and drains the rows with nothing but what a job queue must do, on
// connections of its own:
//
//   - claim, -claimers at once, each for up to -claim-batch rows and never
//     more than the -pool slots free: one transaction of SELECT id, claim_key
//     … ORDER BY claim_key, id LIMIT k FOR UPDATE SKIP LOCKED and UPDATE …
//     SET status = 'running', node_id, started_at WHERE id IN (…) (-form
//     stmt on PostgreSQL: the two as one UPDATE … WHERE id IN (SELECT …)
//     RETURNING, no transaction);
//   - no task: a claimed job is done at once;
//   - complete, -completers at once, each taking what has finished, up to
//     -complete-batch ids: UPDATE … SET status = 'succeeded', finished_at
//     WHERE id IN (…), which frees their slots.
//
// jobs_per_s is measured as `chime bench drain` measures it: the rows from
// the first claim (min started_at, the clock before the claim began) to
// the last completion (max finished_at). Every knob but -jobs, -pool and
// -node takes a comma-separated list: the runs are every combination, each
// on a fresh database, -runs times over, one line each.
//
//	go run ./bench/ceiling -driver mysql -dsn 'root@tcp(127.0.0.1:3306)/chime_ceiling' -claimers 1,2,4
//
// It is not a test: it runs only when asked, and needs a server and an
// account that may create and drop databases.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/store"
)

// knobs are what one run is tuned by.
type knobs struct {
	Claimers      int    // claims in flight at once
	ClaimBatch    int    // most rows one claim takes
	ClaimMin      int    // free slots a claim waits for (fewer rows are left to come)
	Completers    int    // completion UPDATEs in flight at once
	CompleteBatch int    // most ids one completion writes
	Floor         bool   // claims start after where the last one ended
	Form          string // "tx": SELECT … FOR UPDATE SKIP LOCKED then UPDATE; "stmt": one UPDATE … RETURNING (PostgreSQL)
	Triggers      bool   // keep chime's UPDATE triggers on jobs
	ChimeReads    bool   // add, in the claim's transaction, the three reads chime's claim makes beside the pick
}

func (k knobs) fields(l *line) {
	l.add("claimers", k.Claimers)
	l.add("claim_batch", k.ClaimBatch)
	l.add("claim_min", k.ClaimMin)
	l.add("completers", k.Completers)
	l.add("complete_batch", k.CompleteBatch)
	l.add("floor", k.Floor)
	l.add("form", k.Form)
	l.add("chime_reads", k.ChimeReads)
}

// options are the flags as given: lists for the knobs.
type options struct {
	driver, dsn, node string
	jobs, pool, runs  int
	keep              bool
	dropdb            string
	timeout, pause    time.Duration
	// The knobs' lists, as given.
	claimers, claimBatch, claimMin, completers, completeBatch, floor, form, triggers, chimeReads string

	out io.Writer
	log *logrus.Logger
}

func main() {
	o := options{out: os.Stdout}
	fs := flag.NewFlagSet("ceiling", flag.ExitOnError)
	fs.StringVar(&o.driver, "driver", "mysql", "mysql (MariaDB, MySQL) or postgres")
	fs.StringVar(&o.dsn, "dsn", "", "the server, and a database name used as a prefix: each run creates and drops its own database\n"+
		"(default root@tcp(127.0.0.1:3306)/chime_ceiling, postgres://postgres@127.0.0.1:5432/chime_ceiling?sslmode=disable)")
	fs.StringVar(&o.node, "node", "ceiling-1", "node_id the claims write")
	fs.IntVar(&o.jobs, "jobs", 20000, "pending jobs to drain")
	fs.IntVar(&o.pool, "pool", 100, "jobs claimed and not yet completed, at most (chime's taskengine.pool_size)")
	fs.IntVar(&o.runs, "runs", 1, "how many times to run every combination")
	fs.BoolVar(&o.keep, "keep", false, "keep each run's database")
	fs.StringVar(&o.dropdb, "dropdb", "", "only drop this database of the -dsn's server (for scripts/ceiling.sh: chime's runs) and exit")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on one drain")
	fs.DurationVar(&o.pause, "pause", 3*time.Second, "wait between runs, for the server to settle")
	fs.StringVar(&o.claimers, "claimers", "2", "claims in flight at once (list)")
	fs.StringVar(&o.claimBatch, "claim-batch", "50", "most rows per claim (list)")
	fs.StringVar(&o.claimMin, "claim-min", "1", "free slots a claim waits for, at most claim-batch (list)")
	fs.StringVar(&o.completers, "completers", "1", "completions in flight at once (list)")
	fs.StringVar(&o.completeBatch, "complete-batch", "250", "most ids per completion (list)")
	fs.StringVar(&o.floor, "floor", "true", "claims start after where the last ended (list of true,false)")
	fs.StringVar(&o.form, "form", "tx", "claim form: tx, or stmt on PostgreSQL (list)")
	fs.StringVar(&o.triggers, "triggers", "false", "keep chime's UPDATE triggers on jobs (list of true,false)")
	fs.StringVar(&o.chimeReads, "chime-reads", "false", "also read, in each claim's transaction, what chime's claim reads there:\n"+
		"the queues, the definitions' limits and the definitions (list of true,false)")
	_ = fs.Parse(os.Args[1:])
	o.log = logrus.New()
	o.log.SetLevel(logrus.WarnLevel)
	o.log.SetOutput(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, &o); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}

// grid is every combination of the knobs' lists.
func (o *options) grid() ([]knobs, error) {
	ints := func(name, s string) ([]int, error) {
		var out []int
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("-%s: %q is not a positive whole number", name, f)
			}
			out = append(out, n)
		}
		return out, nil
	}
	bools := func(name, s string) ([]bool, error) {
		var out []bool
		for _, f := range strings.Split(s, ",") {
			b, err := strconv.ParseBool(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("-%s: %q is not true or false", name, f)
			}
			out = append(out, b)
		}
		return out, nil
	}
	claimers, err := ints("claimers", o.claimers)
	if err != nil {
		return nil, err
	}
	claimB, err := ints("claim-batch", o.claimBatch)
	if err != nil {
		return nil, err
	}
	claimMin, err := ints("claim-min", o.claimMin)
	if err != nil {
		return nil, err
	}
	complrs, err := ints("completers", o.completers)
	if err != nil {
		return nil, err
	}
	completeB, err := ints("complete-batch", o.completeBatch)
	if err != nil {
		return nil, err
	}
	floors, err := bools("floor", o.floor)
	if err != nil {
		return nil, err
	}
	triggers, err := bools("triggers", o.triggers)
	if err != nil {
		return nil, err
	}
	if o.chimeReads == "" {
		o.chimeReads = "false"
	}
	reads, err := bools("chime-reads", o.chimeReads)
	if err != nil {
		return nil, err
	}
	var forms []string
	for _, f := range strings.Split(o.form, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "tx", f == "stmt" && o.driver == "postgres":
			forms = append(forms, f)
		default:
			return nil, fmt.Errorf("-form: %q: want tx, or stmt on postgres", f)
		}
	}
	var g []knobs
	for _, a := range claimers {
		for _, b := range claimB {
			for _, m := range claimMin {
				for _, c := range complrs {
					for _, d := range completeB {
						for _, fl := range floors {
							for _, fo := range forms {
								for _, t := range triggers {
									for _, r := range reads {
										// A claim never asks for more
										// than its batch, nor waits for
										// more slots than the pool has.
										m := min(m, b, o.pool)
										g = append(g, knobs{a, b, m, c, d, fl, fo, t, r})
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return dedupe(g), nil
}

// dedupe drops repeated combinations (claim-min capped to the same value)
// keeping the first.
func dedupe(g []knobs) []knobs {
	seen := map[knobs]bool{}
	out := g[:0]
	for _, k := range g {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func run(ctx context.Context, o *options) error {
	if o.jobs <= 0 || o.pool <= 0 || o.runs <= 0 {
		return errors.New("-jobs, -pool and -runs must be positive")
	}
	srv, err := newServer(o.driver, o.dsn)
	if err != nil {
		return err
	}
	if o.dropdb != "" {
		return srv.drop(ctx, o.dropdb)
	}
	g, err := o.grid()
	if err != nil {
		return err
	}
	stamp := time.Now().Unix()
	n := 0
	for r := 0; r < o.runs; r++ {
		for _, k := range g {
			if n > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(o.pause):
				}
			}
			n++
			name := fmt.Sprintf("%s_%d_%d", srv.prefix, stamp, n)
			l, err := runOnce(ctx, o, srv, name, k)
			if err != nil {
				return fmt.Errorf("run %d (database %s): %w", n, name, err)
			}
			fmt.Fprintln(o.out, l.String())
		}
	}
	return nil
}

// runOnce makes database name, fills it and drains it with k.
func runOnce(ctx context.Context, o *options, srv *server, name string, k knobs) (l *line, err error) {
	if err := srv.create(ctx, name); err != nil {
		return nil, err
	}
	defer func() {
		if o.keep {
			return
		}
		if derr := srv.drop(context.WithoutCancel(ctx), name); derr != nil && err == nil {
			err = derr
		}
	}()
	st, err := store.Open(ctx, store.Config{Driver: store.Dialect(o.driver), DSN: srv.dsnFor(name), Logger: o.log, MaxOpenConns: 2})
	if err != nil {
		return nil, err
	}
	_, err = st.Migrate(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	db, err := srv.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(k.Claimers + k.Completers + 1)
	db.SetMaxIdleConns(k.Claimers + k.Completers + 1)
	d := newDrainer(db, srv.postgres, o, k)
	if err := d.fill(ctx); err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	triggers, err := d.updateTriggers(ctx, !k.Triggers)
	if err != nil {
		return nil, err
	}
	// `chime bench drain` analyzes its backlog too: a production table
	// has had its statistics since autovacuum's first ANALYZE.
	if srv.postgres {
		if _, err := db.ExecContext(ctx, "ANALYZE jobs"); err != nil {
			return nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	wall, err := d.drain(dctx)
	if err != nil {
		return nil, err
	}
	var succeeded int
	var first, last time.Time
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), MIN(started_at), MAX(finished_at) FROM jobs WHERE status = 'succeeded'").
		Scan(&succeeded, &first, &last); err != nil {
		return nil, fmt.Errorf("read back: %w", err)
	}
	took := last.Sub(first)
	l = &line{}
	l.add("bench", "ceiling")
	l.add("driver", o.driver)
	l.add("jobs", o.jobs)
	l.add("pool", o.pool)
	k.fields(l)
	l.add("update_triggers", triggers)
	l.add("succeeded", succeeded)
	l.add("seconds", strconv.FormatFloat(took.Seconds(), 'f', 3, 64))
	l.add("jobs_per_s", rate(o.jobs, took))
	l.add("wall_jobs_per_s", rate(o.jobs, wall))
	claims, completes := d.claims.Load(), d.completes.Load()
	l.add("claims", claims)
	l.add("rows_per_claim", ratio(int64(o.jobs), claims))
	l.add("ms_per_claim", ratio(d.claimNs.Load(), claims*1e6))
	l.add("completions", completes)
	l.add("rows_per_completion", ratio(int64(o.jobs), completes))
	l.add("ms_per_completion", ratio(d.completeNs.Load(), completes*1e6))
	if succeeded != o.jobs {
		return l, fmt.Errorf("%d of %d jobs succeeded: %s", succeeded, o.jobs, l)
	}
	return l, nil
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// line is key=value pairs, as `chime bench` prints them.
type line struct{ kv []string }

func (l *line) add(k string, v any) {
	s := fmt.Sprint(v)
	if f, ok := v.(float64); ok {
		s = strconv.FormatFloat(f, 'f', 1, 64)
	}
	l.kv = append(l.kv, k+"="+s)
}

func (l *line) String() string { return strings.Join(l.kv, " ") }

// drainer is one run's claimers and completers.
type drainer struct {
	db       *sql.DB
	postgres bool
	o        *options
	k        knobs
	free     slots
	done     doneQueue

	claimed   atomic.Int64
	completed atomic.Int64
	floorMu   sync.Mutex
	floor     *cursor

	claims, claimNs, completes, completeNs atomic.Int64
}

// cursor is a place in the claim order.
type cursor struct{ key, id int64 }

func (c cursor) less(d cursor) bool { return c.key < d.key || c.key == d.key && c.id < d.id }

func newDrainer(db *sql.DB, postgres bool, o *options, k knobs) *drainer {
	d := &drainer{db: db, postgres: postgres, o: o, k: k}
	d.free.init(o.pool)
	d.done.init()
	return d
}

// fill inserts the pending jobs as `chime bench drain` does: due a second
// ago, in multi-row INSERTs of 1,000. chime's BEFORE INSERT trigger
// computes claim_key.
func (d *drainer) fill(ctx context.Context) error {
	// The jobs' definition, as the bench's: read by -chime-reads.
	if _, err := d.db.ExecContext(ctx, "INSERT INTO job_definitions (id, name, task_type) VALUES (1, 'ceiling', 'noop')"); err != nil {
		return err
	}
	due := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
	for done := 0; done < d.o.jobs; {
		n := min(1000, d.o.jobs-done)
		var b strings.Builder
		args := make([]any, 0, 2*n)
		b.WriteString("INSERT INTO jobs (job_definition_id, scheduled_at, run_at, status, priority) VALUES ")
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			if d.postgres {
				fmt.Fprintf(&b, "(1, $%d, $%d, 'pending', 5)", 2*i+1, 2*i+2)
			} else {
				b.WriteString("(1, ?, ?, 'pending', 5)")
			}
			args = append(args, due, due)
		}
		if _, err := d.db.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// updateTriggers counts the UPDATE triggers of jobs, and with drop drops
// them first: it returns those left for the drain.
func (d *drainer) updateTriggers(ctx context.Context, drop bool) (int, error) {
	q := "SELECT DISTINCT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'jobs' AND EVENT_MANIPULATION = 'UPDATE'"
	if d.postgres {
		q = "SELECT DISTINCT trigger_name FROM information_schema.triggers WHERE event_object_schema = current_schema() AND event_object_table = 'jobs' AND event_manipulation = 'UPDATE'"
	}
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("list triggers: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return 0, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil || !drop {
		return len(names), err
	}
	for _, n := range names {
		stmt := "DROP TRIGGER `" + n + "`"
		if d.postgres {
			stmt = `DROP TRIGGER "` + n + `" ON jobs`
		}
		if _, err := d.db.ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("drop trigger %s: %w", n, err)
		}
	}
	return 0, nil
}

// drain runs the claimers and completers until every job has succeeded,
// and returns the wall time from the first claim's start to the last
// completion's return.
func (d *drainer) drain(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	fail := func(err error) {
		cancel(err)
		d.free.abort()
		d.done.close()
	}
	began := time.Now()
	var ended atomic.Int64
	for range d.k.Claimers {
		wg.Go(func() {
			if err := d.claimLoop(ctx); err != nil {
				fail(err)
			}
		})
	}
	for range d.k.Completers {
		wg.Go(func() {
			if err := d.completeLoop(ctx, &ended); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return time.Duration(ended.Load() - began.UnixNano()), nil
}

func (d *drainer) claimLoop(ctx context.Context) error {
	for int(d.claimed.Load()) < d.o.jobs {
		n := d.free.take(d.k.ClaimMin, d.k.ClaimBatch)
		if n == 0 { // aborted
			return nil
		}
		if left := d.o.jobs - int(d.claimed.Load()); left < n {
			// The last rows: the others are claimed or being claimed.
			d.free.give(n - max(left, 0))
			if n = max(left, 0); n == 0 {
				return nil
			}
		}
		began := time.Now()
		ids, err := d.claim(ctx, n)
		d.claims.Add(1)
		d.claimNs.Add(int64(time.Since(began)))
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if len(ids) < n {
			d.free.give(n - len(ids))
		}
		if len(ids) == 0 {
			// The rows left are locked by the other claims in flight.
			time.Sleep(100 * time.Microsecond)
			continue
		}
		d.claimed.Add(int64(len(ids)))
		d.done.put(ids)
	}
	return nil
}

// claim takes up to n due pending rows and marks them running.
func (d *drainer) claim(ctx context.Context, n int) ([]int64, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	due := now.UnixMilli()
	var after *cursor
	if d.k.Floor {
		d.floorMu.Lock()
		after = d.floor
		d.floorMu.Unlock()
	}
	var ids []int64
	var last cursor
	var err error
	if d.k.Form == "stmt" {
		ids, last, err = d.claimStmt(ctx, n, now, due, after)
	} else {
		ids, last, err = d.claimTx(ctx, n, now, due, after)
	}
	if err != nil || len(ids) == 0 || !d.k.Floor {
		return ids, err
	}
	// Every row before last is claimed: by this claim, or by one that
	// held it locked and commits it (nothing else writes jobs here).
	d.floorMu.Lock()
	if d.floor == nil || d.floor.less(last) {
		d.floor = &last
	}
	d.floorMu.Unlock()
	return ids, nil
}

func (d *drainer) claimTx(ctx context.Context, n int, now time.Time, due int64, after *cursor) ([]int64, cursor, error) {
	var last cursor
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, last, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	var q string
	args := []any{due}
	switch {
	case d.postgres && after != nil:
		q = "SELECT id, claim_key FROM jobs WHERE status = 'pending' AND claim_key <= $1 AND (claim_key, id) > ($2, $3) ORDER BY claim_key, id LIMIT $4 FOR UPDATE SKIP LOCKED"
		args = append(args, after.key, after.id)
	case d.postgres:
		q = "SELECT id, claim_key FROM jobs WHERE status = 'pending' AND claim_key <= $1 ORDER BY claim_key, id LIMIT $2 FOR UPDATE SKIP LOCKED"
	case after != nil:
		// The floor as chime's claim writes it on MySQL: an OR that
		// MariaDB turns into a range on all three columns of the index.
		q = "SELECT id, claim_key FROM jobs FORCE INDEX (idx_jobs_claim_order) WHERE status = 'pending' AND claim_key <= ? AND (claim_key > ? OR (claim_key = ? AND id > ?)) ORDER BY claim_key, id LIMIT ? FOR UPDATE SKIP LOCKED"
		args = append(args, after.key, after.key, after.id)
	default:
		q = "SELECT id, claim_key FROM jobs FORCE INDEX (idx_jobs_claim_order) WHERE status = 'pending' AND claim_key <= ? ORDER BY claim_key, id LIMIT ? FOR UPDATE SKIP LOCKED"
	}
	args = append(args, n)
	ids, last, err := scanClaimed(tx.QueryContext(ctx, q, args...))
	if err != nil || len(ids) == 0 {
		return nil, last, err
	}
	if d.k.ChimeReads {
		if err := chimeReads(ctx, tx); err != nil {
			return nil, last, err
		}
	}
	if d.postgres {
		_, err = tx.ExecContext(ctx, "UPDATE jobs SET status = 'running', node_id = $1, started_at = $2 WHERE id = ANY($3)", d.o.node, now, ids)
	} else {
		_, err = tx.ExecContext(ctx, "UPDATE jobs SET status = 'running', node_id = ?, started_at = ? WHERE id IN ("+idList(ids)+")", d.o.node, now)
	}
	if err != nil {
		return nil, last, err
	}
	return ids, last, tx.Commit()
}

// chimeReads are the reads chime's claim makes in its transaction beside
// the pick, for a drain of jobs of one definition (store: readQueues,
// readDefLimits, readDefinitions), each read to its end. They ask what
// the gap between the ceiling and chime's drain owes to them.
func chimeReads(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		"SELECT name, description, max_running, rate_limit, rate_period_ms, rate_tat_us, paused FROM queues ORDER BY name",
		"SELECT id, queue, max_running, required_tags, broadcast, rate_limit, rate_period_ms, rate_tat_us FROM job_definitions WHERE id IN (1)",
		"SELECT * FROM job_definitions WHERE id IN (1)",
	} {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("chime's reads: %w", err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// claimStmt is the claim as one statement (PostgreSQL): no transaction
// of its own, one round trip.
func (d *drainer) claimStmt(ctx context.Context, n int, now time.Time, due int64, after *cursor) ([]int64, cursor, error) {
	floor, args := "", []any{d.o.node, now, due, n}
	if after != nil {
		floor = " AND (claim_key, id) > ($5, $6)"
		args = append(args, after.key, after.id)
	}
	q := "UPDATE jobs SET status = 'running', node_id = $1, started_at = $2 WHERE id IN (SELECT id FROM jobs WHERE status = 'pending' AND claim_key <= $3" +
		floor + " ORDER BY claim_key, id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING id, claim_key"
	return scanClaimed(d.db.QueryContext(ctx, q, args...))
}

// scanClaimed reads id, claim_key rows, and the greatest of them in claim
// order.
func scanClaimed(rows *sql.Rows, err error) ([]int64, cursor, error) {
	var last cursor
	if err != nil {
		return nil, last, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var c cursor
		if err := rows.Scan(&c.id, &c.key); err != nil {
			return nil, last, err
		}
		ids = append(ids, c.id)
		if len(ids) == 1 || last.less(c) {
			last = c
		}
	}
	return ids, last, rows.Err()
}

// idList is ids as a literal SQL list: what go-sql-driver sends for
// placeholders anyway with interpolateParams, as chime's connections do.
func idList(ids []int64) string {
	b := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

func (d *drainer) completeLoop(ctx context.Context, ended *atomic.Int64) error {
	for {
		ids, ok := d.done.take(d.k.CompleteBatch)
		if !ok {
			return nil
		}
		began := time.Now()
		now := began.UTC().Truncate(time.Microsecond)
		var err error
		if d.postgres {
			_, err = d.db.ExecContext(ctx, "UPDATE jobs SET status = 'succeeded', finished_at = $1 WHERE id = ANY($2)", now, ids)
		} else {
			_, err = d.db.ExecContext(ctx, "UPDATE jobs SET status = 'succeeded', finished_at = ? WHERE id IN ("+idList(ids)+")", now)
		}
		d.completes.Add(1)
		d.completeNs.Add(int64(time.Since(began)))
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		d.free.give(len(ids))
		if int(d.completed.Add(int64(len(ids)))) >= d.o.jobs {
			ended.Store(time.Now().UnixNano())
			d.done.close()
			d.free.abort()
			return nil
		}
	}
}

// slots counts the pool's free places: a claim takes some before it runs,
// a completion gives them back.
type slots struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	aborted bool
}

func (s *slots) init(n int) {
	s.free = n
	s.cond = sync.NewCond(&s.mu)
}

// take waits until at least least places are free and takes up to most of
// them; 0 once aborted.
func (s *slots) take(least, most int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.free < least && !s.aborted {
		s.cond.Wait()
	}
	if s.aborted {
		return 0
	}
	n := min(most, s.free)
	s.free -= n
	return n
}

func (s *slots) give(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	s.mu.Unlock()
	s.cond.Broadcast()
}

func (s *slots) abort() {
	s.mu.Lock()
	s.aborted = true
	s.mu.Unlock()
	s.cond.Broadcast()
}

// doneQueue holds the ids of finished jobs until a completer takes them.
type doneQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ids    []int64
	closed bool
}

func (q *doneQueue) init() { q.cond = sync.NewCond(&q.mu) }

func (q *doneQueue) put(ids []int64) {
	q.mu.Lock()
	q.ids = append(q.ids, ids...)
	q.mu.Unlock()
	q.cond.Signal()
}

// take waits for at least one id and takes up to most; false once closed.
func (q *doneQueue) take(most int) ([]int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ids) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, false
	}
	n := min(most, len(q.ids))
	out := append([]int64(nil), q.ids[:n]...)
	q.ids = append(q.ids[:0], q.ids[n:]...)
	if len(q.ids) > 0 {
		q.cond.Signal() // another completer may take the rest
	}
	return out, true
}

func (q *doneQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// server is where the runs make their databases.
type server struct {
	postgres bool
	prefix   string
	my       *mysqldrv.Config
	pg       *url.URL
	isoVar   string // MySQL: the isolation variable's name
}

func newServer(driver, dsn string) (*server, error) {
	switch driver {
	case "mysql":
		if dsn == "" {
			dsn = "root@tcp(127.0.0.1:3306)/chime_ceiling"
		}
		c, err := mysqldrv.ParseDSN(dsn)
		if err != nil {
			return nil, fmt.Errorf("-dsn: %w", err)
		}
		s := &server{my: c, prefix: c.DBName}
		if s.prefix == "" {
			s.prefix = "chime_ceiling"
		}
		return s, nil
	case "postgres":
		if dsn == "" {
			dsn = "postgres://postgres@127.0.0.1:5432/chime_ceiling?sslmode=disable"
		}
		u, err := url.Parse(dsn)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, errors.New("-dsn: write it as postgres://user@host:5432/prefix?sslmode=disable")
		}
		s := &server{postgres: true, pg: u, prefix: strings.TrimPrefix(u.Path, "/")}
		if s.prefix == "" {
			s.prefix = "chime_ceiling"
		}
		return s, nil
	}
	return nil, fmt.Errorf("-driver: %q: want mysql or postgres", driver)
}

// dsnFor is the DSN of database name, as the user wrote it otherwise:
// chime's store adds its own session settings.
func (s *server) dsnFor(name string) string {
	if s.postgres {
		u := *s.pg
		u.Path = "/" + name
		return u.String()
	}
	c := s.my.Clone()
	c.DBName = name
	return c.FormatDSN()
}

// admin opens a connection pool to the server outside the runs' databases.
func (s *server) admin() (*sql.DB, error) {
	if s.postgres {
		u := *s.pg
		u.Path = "/postgres"
		return sql.Open("pgx", u.String())
	}
	c := s.my.Clone()
	c.DBName = ""
	return sql.Open("mysql", c.FormatDSN())
}

func (s *server) quote(name string) string {
	if s.postgres {
		return pgx.Identifier{name}.Sanitize()
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func (s *server) create(ctx context.Context, name string) error {
	db, err := s.admin()
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+s.quote(name)); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if !s.postgres && s.isoVar == "" {
		// MariaDB before 11.1 calls it tx_isolation, MySQL 8
		// transaction_isolation (as chime's store asks).
		var v string
		s.isoVar = "transaction_isolation"
		if db.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&v) != nil {
			s.isoVar = "tx_isolation"
		}
	}
	return nil
}

func (s *server) drop(ctx context.Context, name string) error {
	db, err := s.admin()
	if err != nil {
		return err
	}
	defer db.Close()
	stmt := "DROP DATABASE " + s.quote(name)
	if s.postgres {
		// The backends of a pool just closed may still be ending (13+).
		stmt += " WITH (FORCE)"
	}
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// open is the drain's pool on database name, with the session settings
// chime's store gives its connections: UTC, READ COMMITTED and, on
// MySQL, placeholders interpolated in the client (no prepare round trip).
func (s *server) open(ctx context.Context, name string) (*sql.DB, error) {
	var db *sql.DB
	if s.postgres {
		c, err := pgx.ParseConfig(s.dsnFor(name))
		if err != nil {
			return nil, err
		}
		c.RuntimeParams["timezone"] = "UTC"
		c.RuntimeParams["default_transaction_isolation"] = "read committed"
		db = stdlib.OpenDB(*c)
	} else {
		c := s.my.Clone()
		c.DBName = name
		c.ParseTime, c.Loc, c.InterpolateParams = true, time.UTC, true
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params["time_zone"] = "'+00:00'"
		c.Params[s.isoVar] = "'READ-COMMITTED'"
		conn, err := mysqldrv.NewConnector(c)
		if err != nil {
			return nil, err
		}
		db = sql.OpenDB(conn)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
