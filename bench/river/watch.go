package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// watch profiles, from the server's side, whatever runs on database name
// until ctx ends or for passes: it samples pg_stat_activity every interval
// (which statements the database's backends are running, and what they
// wait on) and takes the difference of the database's, tables' and
// trigger functions' cumulative counters over the run. It needs neither
// pg_stat_statements (shared_preload_libraries, so a restart) nor the
// server's log. With trackFunctions it first sets track_functions = 'pl'
// on that database alone (ALTER DATABASE, superuser): it applies to the
// sessions that connect after it, so start watch before the run.
func watch(ctx context.Context, dsn, name string, interval, limit time.Duration, trackFunctions bool, out io.Writer) error {
	if !dbName.MatchString(name) {
		return fmt.Errorf("database name %q: want lower-case letters, digits and _", name)
	}
	// The database may not be there yet: river-bench --db creates it
	// after a watch started beside it.
	for {
		var exists bool
		admin, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
			_ = admin.Close(context.WithoutCancel(ctx))
		}
		if err != nil || exists {
			if err != nil {
				return err
			}
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if trackFunctions {
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		_, err = admin.Exec(ctx, "ALTER DATABASE "+name+" SET track_functions = 'pl'")
		_ = admin.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
	}
	target, err := withDatabase(dsn, name)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	before, err := counters(ctx, conn)
	if err != nil {
		return err
	}
	began := time.Now()
	runCtx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	samples := map[activityKey]int{}
	ticks, busyTicks := 0, 0
	t := time.NewTicker(interval)
	defer t.Stop()
	for runCtx.Err() == nil {
		rows, err := conn.Query(runCtx, `SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), query
			FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND backend_type = 'client backend' AND state IS DISTINCT FROM 'idle'`)
		if err != nil {
			break // ctx ended mid-query, or the database went away
		}
		busy := false
		for rows.Next() {
			var k activityKey
			var q string
			if err := rows.Scan(&k.state, &k.waitType, &k.wait, &q); err != nil {
				rows.Close()
				return err
			}
			k.query = shape(q)
			samples[k]++
			busy = true
		}
		rows.Close()
		ticks++
		if busy {
			busyTicks++
		}
		select {
		case <-runCtx.Done():
		case <-t.C:
		}
	}
	took := time.Since(began)
	// Backends flush their counters at most once a second.
	time.Sleep(1500 * time.Millisecond)
	after, err := counters(context.WithoutCancel(ctx), conn)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "watched %s for %.1f s: %d samples every %s, %d with a non-idle backend\n\n", name, took.Seconds(), ticks, interval, busyTicks)
	printActivity(out, samples)
	fmt.Fprintln(out)
	printCounters(out, before, after)
	return nil
}

// activityKey is one sampled backend: its state, its wait, its statement.
type activityKey struct{ state, waitType, wait, query string }

var (
	numbered = regexp.MustCompile(`\$\d+(\s*,\s*\$\d+)+`)
	spaces   = regexp.MustCompile(`\s+`)
	whens    = regexp.MustCompile(`(WHEN \$N THEN (CAST\()?\$N( AS TIMESTAMPTZ\))? ?)+`)
)

// shape folds a statement's variable parts (lists of placeholders, runs
// of CASE WHENs, whitespace) so that the same statement with other batch
// sizes counts once, and cuts it short.
func shape(q string) string {
	q = spaces.ReplaceAllString(strings.TrimSpace(q), " ")
	q = numbered.ReplaceAllString(q, "$$N…")
	q = regexp.MustCompile(`\$\d+`).ReplaceAllString(q, "$$N")
	q = whens.ReplaceAllString(q, "WHEN … ")
	if len(q) > 150 {
		q = q[:150] + "…"
	}
	return q
}

func printActivity(out io.Writer, samples map[activityKey]int) {
	total := 0
	for _, n := range samples {
		total += n
	}
	if total == 0 {
		fmt.Fprintln(out, "no backend was seen busy")
		return
	}
	keys := slices.SortedFunc(maps.Keys(samples), func(a, b activityKey) int { return cmp.Compare(samples[b], samples[a]) })
	byWait := map[string]int{}
	for _, k := range keys {
		byWait[k.state+" "+k.waitType+":"+k.wait] += samples[k]
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "backend samples by state and wait\t%\t")
	for _, k := range slices.SortedFunc(maps.Keys(byWait), func(a, b string) int { return cmp.Compare(byWait[b], byWait[a]) }) {
		fmt.Fprintf(w, "%s\t%.1f\t\n", k, 100*float64(byWait[k])/float64(total))
	}
	_ = w.Flush()
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "%\tstate\twait\tstatement")
	for i, k := range keys {
		if i == 25 {
			break
		}
		fmt.Fprintf(w, "%.1f\t%s\t%s:%s\t%s\n", 100*float64(samples[k])/float64(total), k.state, k.waitType, k.wait, k.query)
	}
	_ = w.Flush()
}

// counterSet is the cumulative counters of one moment, by "view.row.column".
type counterSet map[string]float64

func counters(ctx context.Context, conn *pgx.Conn) (counterSet, error) {
	c := counterSet{}
	queries := []struct{ prefix, sql string }{
		{"db", `SELECT '', xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted,
			blks_hit, blks_read, temp_bytes FROM pg_stat_database WHERE datname = current_database()`},
		{"table", `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, seq_scan, coalesce(idx_scan, 0),
			n_dead_tup, 0, 0, 0 FROM pg_stat_user_tables`},
		{"function", `SELECT funcname, calls, total_time, self_time, 0, 0, 0, 0, 0, 0, 0 FROM pg_stat_user_functions`},
	}
	cols := map[string][]string{
		"db":       {"commits", "rollbacks", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted", "blks_hit", "blks_read", "temp_bytes"},
		"table":    {"ins", "upd", "hot_upd", "del", "seq_scan", "idx_scan", "dead_tup"},
		"function": {"calls", "total_ms", "self_ms"},
	}
	for _, q := range queries {
		rows, err := conn.Query(ctx, q.sql)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var row string
			v := make([]float64, 10)
			if err := rows.Scan(&row, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]); err != nil {
				rows.Close()
				return nil, err
			}
			for i, col := range cols[q.prefix] {
				c[q.prefix+"."+row+"."+col] = v[i]
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func printCounters(out io.Writer, before, after counterSet) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "counter\tchange over the run\t")
	for _, k := range slices.Sorted(maps.Keys(after)) {
		d := after[k] - before[k]
		if d == 0 || strings.HasSuffix(k, ".dead_tup") && after[k] == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\t%.0f\t\n", k, d)
	}
	_ = w.Flush()
}
