package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/models"
)

// editBody collects the flags the user gave into a PATCH body: flags not
// given are not sent, so the stored values stay. set maps a flag to its
// body key and value; the value is read when the command runs.
type editBody struct {
	fields []editField
}

type editField struct {
	flag, key string
	value     func() (any, error)
}

func (b *editBody) add(flag, key string, value func() (any, error)) {
	b.fields = append(b.fields, editField{flag, key, value})
}

func (b *editBody) build(cmd *cobra.Command) (map[string]any, error) {
	body := map[string]any{}
	for _, f := range b.fields {
		if !cmd.Flags().Changed(f.flag) {
			continue
		}
		v, err := f.value()
		if err != nil {
			return nil, err
		}
		body[f.key] = v
	}
	return body, nil
}

var errNoChange = errors.New("nothing to change: give at least one flag (see --help)")

func strVal(p *string) func() (any, error) { return func() (any, error) { return *p, nil } }
func intVal(p *int) func() (any, error)    { return func() (any, error) { return *p, nil } }

// definitionFlags are the flags definition add and edit share. Each
// command registers them with its own help and defaults; both send only
// the ones given, add leaving the rest to the server's defaults and edit
// to the stored values.
type definitionFlags struct {
	taskType, descr, notifyOn, emails    string
	timeout, attempts, backoff, priority int
	recovery                             bool
	queue                                string
	maxRunning                           int
	requiredTags                         string
	broadcast                            bool
	rate, periodMs                       int64
}

// registerLimits adds the flags of the limits, shared by add and edit.
func (d *definitionFlags) registerLimits(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&d.queue, "queue", "default", "the queue whose limits its jobs take (chime queue list)")
	fl.IntVar(&d.maxRunning, "max-running", 0, "the most of its jobs active at once, cluster-wide (0: no limit)")
	fl.Int64Var(&d.rate, "rate", 0, "at most this many starts of its jobs per --period-ms, cluster-wide (0: no rate limit)")
	fl.Int64Var(&d.periodMs, "period-ms", 0, "the rate limit's period in milliseconds")
	fl.BoolVar(&d.broadcast, "broadcast", false, "run each job once on every live node that has its required tags (shards: see docs/limits.md)")
	fl.StringVar(&d.requiredTags, "required-tags", "", "node tags its jobs need, comma-separated (only nodes whose node.tags have them all run them; empty: any node)")
}

// fields adds their body keys to b. --params is not among them: add leaves
// an empty one out, edit refuses it.
func (d *definitionFlags) fields(b *editBody) {
	b.add("task-type", "task_type", strVal(&d.taskType))
	b.add("description", "description", strVal(&d.descr))
	b.add("timeout", "timeout_seconds", intVal(&d.timeout))
	b.add("max-attempts", "max_attempts", intVal(&d.attempts))
	b.add("retry-backoff", "retry_backoff_seconds", intVal(&d.backoff))
	b.add("notify-on", "notify_on", strVal(&d.notifyOn))
	b.add("notify-emails", "notify_emails", strVal(&d.emails))
	b.add("requests-recovery", "requests_recovery", func() (any, error) { return d.recovery, nil })
	b.add("priority", "priority", intVal(&d.priority))
	b.add("queue", "queue", strVal(&d.queue))
	b.add("required-tags", "required_tags", strVal(&d.requiredTags))
	b.add("broadcast", "broadcast", func() (any, error) { return d.broadcast, nil })
	rateVal := func(v *int64) func() (any, error) {
		return func() (any, error) {
			if *v == 0 {
				return nil, nil // JSON null: no rate limit
			}
			return *v, nil
		}
	}
	b.add("rate", "rate_limit", rateVal(&d.rate))
	b.add("period-ms", "rate_period_ms", rateVal(&d.periodMs))
	b.add("max-running", "max_running", func() (any, error) {
		if d.maxRunning == 0 {
			return nil, nil // JSON null: no limit
		}
		return d.maxRunning, nil
	})
}

// edit sends body as a PATCH to the row of path that arg names (id or
// name; what says what it is) and prints the row the API answers with. An
// empty body is refused before anything is looked up.
func (c *client) edit(ctx context.Context, out io.Writer, path, what, arg string, body map[string]any) error {
	if len(body) == 0 {
		return errNoChange
	}
	id, err := c.resolve(ctx, path, what, arg)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.do(ctx, "PATCH", path+"/"+id, nil, body, &raw); err != nil {
		return err
	}
	return c.printRow(out, raw)
}

// specFlags are the flags that choose a schedule's kind, of which add
// takes exactly one and edit at most one.
var specFlags = []string{"cron", "every", "at"}

// givenSpecs lists the flags of specFlags that given reports as given.
func givenSpecs(given func(flag string) bool) []string {
	var out []string
	for _, fl := range specFlags {
		if given(fl) {
			out = append(out, fl)
		}
	}
	return out
}

// setSpec writes into body the schedule_type and spec column that flag,
// one of specFlags, sets, from that flag's value.
func setSpec(body map[string]any, flag, cron, every, at string) error {
	switch flag {
	case "cron":
		body["schedule_type"], body["cron_expr"] = models.ScheduleCron, cron
	case "every":
		d, err := time.ParseDuration(every)
		if err != nil || d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("--every %q: want a whole number of seconds such as 30s, 5m or 1h", every)
		}
		body["schedule_type"], body["interval_seconds"] = models.ScheduleInterval, int64(d/time.Second)
	default:
		body["schedule_type"], body["run_at"] = models.ScheduleOnce, at
	}
	return nil
}

func newDefinitionEditCommand(f *clientFlags) *cobra.Command {
	var (
		b            editBody
		d            definitionFlags
		name, params string
	)
	cmd := &cobra.Command{
		Use:   "edit ID|NAME [flags]",
		Short: "Change a job definition: only the flags given change",
		Long: `Change a job definition. Only the flags given are changed; the others keep
their stored value. Its schedules fire with the new values from their next
fire on; jobs already written keep the params they were written with.`,
		Example: `  chime definition edit hello --params '{"command":"echo hello again"}'
  chime definition edit nightly-backup --max-attempts 5 --notify-on failure --notify-emails ops@example.com`,
		Args: cobra.ExactArgs(1),
	}
	b.add("name", "name", strVal(&name))
	b.add("params", "default_params", func() (any, error) { return jsonFlag("params", params) })
	d.fields(&b)
	cmd.RunE = runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
		body, err := b.build(cmd)
		if err != nil {
			return err
		}
		return c.edit(ctx, out, definitionsPath, "job definition", args[0], body)
	})
	fl := cmd.Flags()
	fl.StringVar(&name, "name", "", "new name")
	fl.StringVar(&d.taskType, "task-type", "", "registered task type")
	fl.StringVar(&params, "params", "", "default params, a JSON object (replaces the stored one)")
	fl.StringVar(&d.descr, "description", "", "free text")
	fl.IntVar(&d.timeout, "timeout", 0, "seconds before a run is stopped (0 = none)")
	fl.IntVar(&d.attempts, "max-attempts", 1, "attempts per job, retries included")
	fl.IntVar(&d.backoff, "retry-backoff", 10, "seconds between attempts")
	fl.StringVar(&d.notifyOn, "notify-on", "", "email on never, failure, success or always")
	fl.StringVar(&d.emails, "notify-emails", "", "comma-separated addresses")
	fl.BoolVar(&d.recovery, "requests-recovery", true, "run a job cut off by the loss of its node again without using an attempt")
	fl.IntVar(&d.priority, "priority", models.PriorityDefault, priorityUsage+"; jobs already written keep theirs")
	d.registerLimits(cmd)
	return cmd
}

func newScheduleEditCommand(f *clientFlags) *cobra.Command {
	var (
		b                                                                        editBody
		name, def, cron, every, at, tz, start, end, misfire, concurrency, params string
		syntax, dst, calendar                                                    string
		maxRuns, catchup, priority                                               int
	)
	cmd := &cobra.Command{
		Use:   "edit ID|NAME [flags]",
		Short: "Change a schedule: only the flags given change",
		Long: `Change a schedule. Only the flags given are changed; the others keep their
stored value. --cron, --every or --at switch the schedule to that kind. Editing
an invalid or completed schedule makes it active again (the edit is how it is
fixed or extended); a paused one stays paused. The schedule engine applies the
change at once.`,
		Example: `  chime schedule edit hello-10s --cron '*/30 * * * * *'
  chime schedule edit nightly --timezone Europe/Berlin --misfire-policy skip
  chime schedule edit report --max-runs 0   # no limit any more`,
		Args: cobra.ExactArgs(1),
	}
	b.add("name", "name", strVal(&name))
	b.add("timezone", "timezone", strVal(&tz))
	b.add("start-at", "start_at", nullable(&start))
	b.add("end-at", "end_at", nullable(&end))
	b.add("misfire-policy", "misfire_policy", strVal(&misfire))
	b.add("concurrency", "concurrency", strVal(&concurrency))
	b.add("cron-syntax", "cron_syntax", strVal(&syntax))
	b.add("dst-policy", "dst_policy", strVal(&dst))
	b.add("calendar", "calendar", strVal(&calendar))
	b.add("max-runs", "max_runs", func() (any, error) {
		if maxRuns <= 0 {
			return nil, nil
		}
		return maxRuns, nil
	})
	b.add("catchup-window", "catchup_window_seconds", func() (any, error) {
		if catchup < 0 {
			return nil, nil
		}
		return catchup, nil
	})
	b.add("priority", "priority", func() (any, error) {
		if priority == 0 {
			return nil, nil // the definition's
		}
		return priority, nil
	})
	b.add("params", "params", func() (any, error) {
		if params == "" {
			return nil, nil
		}
		return jsonFlag("params", params)
	})
	cmd.RunE = runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
		kinds := givenSpecs(cmd.Flags().Changed)
		if len(kinds) > 1 {
			return errors.New("give at most one of --cron, --every or --at")
		}
		body, err := b.build(cmd)
		if err != nil {
			return err
		}
		if len(kinds) == 1 {
			// Switching kind clears the other spec columns.
			body["cron_expr"], body["interval_seconds"], body["run_at"] = nil, nil, nil
			if err := setSpec(body, kinds[0], cron, every, at); err != nil {
				return err
			}
		}
		if cmd.Flags().Changed("definition") {
			id, err := c.resolve(ctx, definitionsPath, "job definition", def)
			if err != nil {
				return err
			}
			body["job_definition_id"], _ = strconv.ParseInt(id, 10, 64)
		}
		return c.edit(ctx, out, schedulesPath, "schedule", args[0], body)
	})
	fl := cmd.Flags()
	fl.StringVar(&name, "name", "", "new name")
	fl.StringVar(&def, "definition", "", "job definition to run, by id or name")
	fl.StringVar(&cron, "cron", "", `make it a cron schedule: 5 fields, 6 with seconds, or "@daily", "@every 5m" (a Quartz one needs --cron-syntax quartz)`)
	fl.StringVar(&every, "every", "", "make it an interval schedule: 30s, 5m, 1h")
	fl.StringVar(&at, "at", "", "make it a once schedule at this RFC 3339 time")
	fl.StringVar(&tz, "timezone", "", "IANA time zone of the cron expression")
	fl.StringVar(&start, "start-at", "", `no fire before this RFC 3339 time ("" = no bound)`)
	fl.StringVar(&end, "end-at", "", `no fire after this RFC 3339 time ("" = no bound)`)
	fl.IntVar(&maxRuns, "max-runs", 0, "stop after this many fires (0 = no limit)")
	fl.StringVar(&misfire, "misfire-policy", "", "fire_once, skip or fire_all")
	fl.IntVar(&catchup, "catchup-window", -1, "seconds: missed fires older than this are dropped; -1 = no bound")
	fl.StringVar(&concurrency, "concurrency", "", "allow or forbid overlapping jobs")
	fl.StringVar(&params, "params", "", `params merged over the definition's defaults, a JSON object ("" = none)`)
	fl.StringVar(&syntax, "cron-syntax", "", "standard or quartz (Quartz 2.3.2 cron: 6-7 fields, ?, L, W, #, 1 = Sunday)")
	fl.StringVar(&dst, "dst-policy", "", "standard cron across DST changes: once, skip, both or wall (docs/quartz.md)")
	fl.StringVar(&calendar, "calendar", "", `calendar whose excluded times are skipped, by name ("" = none)`)
	fl.IntVar(&priority, "priority", 0, "priority of its jobs, 1 (lowest) to 10 (highest); 0 = the definition's; jobs already written keep theirs")
	return cmd
}

// nullable sends an empty flag as null, which clears the column.
func nullable(p *string) func() (any, error) {
	return func() (any, error) {
		if *p == "" {
			return nil, nil
		}
		return *p, nil
	}
}
