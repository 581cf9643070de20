package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

const queuesPath = "/api/v1/queues"

// queueRow is a queue as GET /queues shows it.
type queueRow struct {
	Name         string `json:"name"`
	MaxRunning   *int64 `json:"max_running"`
	RateLimit    *int64 `json:"rate_limit"`
	RatePeriodMs *int64 `json:"rate_period_ms"`
	Paused       bool   `json:"paused"`
	Running      int64  `json:"running"`
	Waiting      int64  `json:"waiting"`
	Invalid      string `json:"invalid"`
	Missing      bool   `json:"missing"`
}

func newQueueCommand() *cobra.Command {
	cmd, f := adminGroup("queue", "Manage queues (cluster-wide limits on jobs)",
		"A queue bounds its jobs cluster-wide: max_running (queued, running or paused at once), a rate limit "+
			"(at most N starts per period, spaced evenly) and pause. A definition names its queue (default 'default'); "+
			"a schedule or an ad hoc run may override it. Limits bind new starts from the next claim; running jobs are "+
			"never stopped. docs/limits.md has the details.")
	cmd.Aliases = []string{"queues"}

	listCmd := &cobra.Command{
		Use: "list", Short: "List queues with running and waiting jobs", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, queuesPath, nil, []string{"NAME", "RUNNING", "LIMIT", "RATE", "WAITING", "STATE"},
				func(q *queueRow) []string {
					limit, rate, state := "-", "-", "open"
					if q.MaxRunning != nil {
						limit = strconv.FormatInt(*q.MaxRunning, 10)
					}
					if q.RateLimit != nil && q.RatePeriodMs != nil {
						rate = fmt.Sprintf("%d/%dms", *q.RateLimit, *q.RatePeriodMs)
					}
					switch {
					case q.Missing:
						state = "missing"
					case q.Invalid != "":
						state = "invalid: " + q.Invalid
					case q.Paused:
						state = "paused"
					}
					return []string{str(q.Name), itoa(q.Running), limit, rate, itoa(q.Waiting), str(state)}
				})
		}),
	}
	showCmd := &cobra.Command{
		Use: "show NAME", Short: "Show a queue", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			return c.show(ctx, out, queuesPath+"/"+url.PathEscape(args[0]))
		}),
	}
	var descr string
	var maxRunning, rate, periodMs int64
	var paused bool
	setCmd := &cobra.Command{
		Use:   "set NAME [--max-running N] [--rate N --period-ms MS] [--paused]",
		Short: "Create a queue or replace its settings (a limit left out is none)",
		Example: `  chime queue set erp --max-running 2
  chime queue set partner-api --rate 100 --period-ms 60000`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			body := map[string]any{"description": descr, "paused": paused}
			if maxRunning != 0 {
				body["max_running"] = maxRunning
			}
			if rate != 0 || periodMs != 0 {
				body["rate_limit"], body["rate_period_ms"] = rate, periodMs
			}
			var raw json.RawMessage
			if err := c.do(ctx, "PUT", queuesPath+"/"+url.PathEscape(args[0]), nil, body, &raw); err != nil {
				return err
			}
			return c.printRow(out, raw)
		}),
	}
	fl := setCmd.Flags()
	fl.StringVar(&descr, "description", "", "free text")
	fl.Int64Var(&maxRunning, "max-running", 0, "the most jobs of the queue active at once, cluster-wide (0: no limit)")
	fl.Int64Var(&rate, "rate", 0, "at most this many starts per --period-ms (0: no rate limit)")
	fl.Int64Var(&periodMs, "period-ms", 0, "the rate limit's period in milliseconds")
	fl.BoolVar(&paused, "paused", false, "create or leave it paused")

	state := func(use, short, action string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
				var raw json.RawMessage
				if err := c.do(ctx, "POST", queuesPath+"/"+url.PathEscape(args[0])+"/"+action, nil, nil, &raw); err != nil {
					return err
				}
				return c.printRow(out, raw)
			}),
		}
	}
	deleteCmd := &cobra.Command{
		Use: "delete NAME", Short: "Delete a queue nothing names", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			if err := c.do(ctx, "DELETE", queuesPath+"/"+url.PathEscape(args[0]), nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted queue %s\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(listCmd, showCmd, setCmd, state("pause", "Stop new starts of the queue's jobs, cluster-wide", "pause"),
		state("resume", "Resume a paused queue", "resume"), deleteCmd)
	return cmd
}
