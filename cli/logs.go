package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/models"
)

// DefaultLogLimit is how many lines `job logs` prints without --limit,
// --tail or --follow.
const DefaultLogLimit = 500

// logsFlags are the flags of `job logs`.
type logsFlags struct {
	limit    int
	tail     int
	cursor   string
	follow   bool
	interval time.Duration
	hint     io.Writer // where the "more lines" hint goes: stderr, so piped output stays the log alone
}

func newLogsCommand(f *clientFlags) *cobra.Command {
	lf := &logsFlags{}
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a job's log, oldest first (--tail, --follow, paging with --cursor)",
		Long: `Print a job's log lines, oldest first: every line its task logged, every
outcome, retry, recovery and refusal. A first attempt's queue and start times
are the job's queued_at and started_at (chime job show).

Without flags the first ` + strconv.Itoa(DefaultLogLimit) + ` lines are printed; when there are more,
a hint on stderr gives the --cursor that continues after the last line shown.
--limit 0 prints every line. --tail N prints the last N lines. --follow prints
what is there (or the last --tail lines) and then new lines as the job writes
them, until the job has finished; Ctrl-C stops following.

With -o json every line is one JSON object on its own output line (JSON Lines),
so a follow can be piped into jq.`,
		Example: `  chime job logs 42
  chime job logs 42 --tail 20
  chime job logs 42 --follow
  chime job logs 42 --limit 100 --cursor <cursor from the hint>`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
				return fmt.Errorf("job id %q: want a number", args[0])
			}
			if lf.limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (every line) or more", lf.limit)
			}
			if lf.tail < 0 {
				return fmt.Errorf("--tail %d: want a positive number of lines", lf.tail)
			}
			if lf.interval <= 0 {
				return fmt.Errorf("--interval %s: want a positive duration", lf.interval)
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			lf.hint = cmd.ErrOrStderr()
			return c.jobLogs(cmd.Context(), cmd.OutOrStdout(), args[0], lf, cmd.Flags().Changed("tail"))
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&lf.limit, "limit", DefaultLogLimit, "most lines to print (0 = every line); ignored with --tail and --follow")
	fl.IntVar(&lf.tail, "tail", 0, "print only the last N lines (reads the whole log to find them)")
	fl.StringVar(&lf.cursor, "cursor", "", "start after the line this cursor names (from the hint of an earlier call)")
	fl.BoolVarP(&lf.follow, "follow", "f", false, "keep printing new lines until the job has finished")
	fl.DurationVar(&lf.interval, "interval", time.Second, "how often --follow asks for new lines")
	cmd.MarkFlagsMutuallyExclusive("tail", "limit")
	return cmd
}

// logPage fetches up to limit lines after cursor. next is the cursor after
// the last line returned (the one passed in when none were).
func (c *client) logPage(ctx context.Context, id, cursor string, limit int) (lines []models.JobLog, next string, err error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page api.List[models.JobLog]
	if err := c.do(ctx, "GET", jobsPath+"/"+id+"/logs", q, nil, &page); err != nil {
		return nil, "", err
	}
	next = page.NextCursor
	if next == "" {
		next = cursor
	}
	return page.Items, next, nil
}

func (c *client) jobLogs(ctx context.Context, out io.Writer, id string, lf *logsFlags, tailSet bool) error {
	err := c.jobLogsUntilDone(ctx, out, id, lf, tailSet)
	// Ctrl-C ends a follow (or a long read): not a failure.
	if err != nil && ctx.Err() != nil && (lf.follow || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

func (c *client) jobLogsUntilDone(ctx context.Context, out io.Writer, id string, lf *logsFlags, tailSet bool) error {
	cursor := lf.cursor
	switch {
	case tailSet || lf.follow:
		// Read to the end, keeping the last --tail lines (all of them
		// for a follow without --tail), then print them.
		var kept []models.JobLog
		for {
			lines, next, err := c.logPage(ctx, id, cursor, api.MaxLimit)
			if err != nil {
				return err
			}
			cursor = next
			kept = append(kept, lines...)
			if tailSet && len(kept) > lf.tail {
				kept = append(kept[:0], kept[len(kept)-lf.tail:]...)
			}
			if lf.follow && !tailSet {
				if err := c.printLogs(out, kept); err != nil {
					return err
				}
				kept = kept[:0]
			}
			if len(lines) < api.MaxLimit {
				break
			}
		}
		if err := c.printLogs(out, kept); err != nil {
			return err
		}
	default:
		left := lf.limit
		for left > 0 || lf.limit == 0 {
			n := api.MaxLimit
			if lf.limit > 0 {
				n = min(left, api.MaxLimit)
			}
			lines, next, err := c.logPage(ctx, id, cursor, n)
			if err != nil {
				return err
			}
			cursor = next
			left -= len(lines)
			if err := c.printLogs(out, lines); err != nil {
				return err
			}
			if len(lines) < n {
				return nil // the end of the log
			}
		}
		// --limit is used up: say so when more lines exist.
		more, _, err := c.logPage(ctx, id, cursor, 1)
		if err != nil {
			return err
		}
		if len(more) > 0 {
			fmt.Fprintf(lf.hint, "(more lines: add --cursor %s to go on, --tail N for the last N, --limit 0 for all, --follow to keep up)\n",
				inertCell(cursor))
		}
		return nil
	}
	if !lf.follow {
		return nil
	}
	return c.followLogs(ctx, out, id, cursor, lf.interval)
}

// followLogs polls for lines after cursor until the job has finished. The
// status is read before the lines: the task engine writes a job's lines,
// its last line included, in or before the transaction that finishes it,
// so the lines read after a finished status are all of them up to the end
// (docs/api.md, job logs). One more poll an interval later prints what
// was written after the end (a notification's line, say); the cursor
// after a succeeded job's derived last line still lets those through.
func (c *client) followLogs(ctx context.Context, out io.Writer, id, cursor string, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	finished := false
	for {
		var job struct {
			Status models.JobStatus `json:"status"`
		}
		if !finished {
			if err := c.do(ctx, "GET", jobsPath+"/"+id, nil, nil, &job); err != nil {
				return err
			}
		}
		for {
			lines, next, err := c.logPage(ctx, id, cursor, api.MaxLimit)
			if err != nil {
				return err
			}
			cursor = next
			if err := c.printLogs(out, lines); err != nil {
				return err
			}
			if len(lines) < api.MaxLimit {
				break
			}
		}
		if finished {
			return nil
		}
		finished = job.Status.Finished()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// printLogs writes lines as text, or as JSON Lines with -o json.
func (c *client) printLogs(out io.Writer, lines []models.JobLog) error {
	for i := range lines {
		l := &lines[i]
		if c.output == "json" {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(out, inert(string(b), true)+"\n"); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(out, "%s  %-5s  %s\n", l.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
			inertCell(l.Level), inert(l.Message, false)); err != nil {
			return err
		}
	}
	return nil
}
