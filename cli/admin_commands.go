package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/models"
)

type (
	nodeRow       = models.Node
	definitionRow = models.JobDefinition
	jobRow        = models.Job
	scheduleRow   = api.ScheduleView
)

const (
	definitionsPath = api.Prefix + "/definitions"
	calendarsPath   = api.Prefix + "/calendars"
	schedulesPath   = api.Prefix + "/schedules"
	jobsPath        = api.Prefix + "/jobs"
)

// priorityUsage is the --priority flag of definitions.
const priorityUsage = "default priority of its jobs, 1 (lowest) to 10 (highest); among due jobs the claim takes higher ones first"

func newDefinitionCommand() *cobra.Command {
	cmd, f := adminGroup("definition", "Manage job definitions (what to run)",
		"A job definition names a task type with its default params and run policy. Schedules and ad hoc runs refer to one.")
	cmd.Aliases = []string{"definitions", "def"}

	var (
		addBody    editBody
		d          definitionFlags
		params     string
		pf         pageFlags
		listByName string
	)
	d.fields(&addBody)
	addCmd := &cobra.Command{
		Use:   "add NAME --task-type TYPE [flags]",
		Short: "Create a job definition",
		Example: `  chime definition add nightly-backup --task-type shell --params '{"command":"backup.sh"}' --max-attempts 3
  chime definition add ping --task-type httpcall --params '{"url":"https://example.com/health"}' --notify-on failure --notify-emails ops@example.com`,
		Args: cobra.ExactArgs(1),
	}
	addCmd.RunE = runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
		body, err := addBody.build(addCmd)
		if err != nil {
			return err
		}
		body["name"] = args[0]
		if params != "" {
			p, err := jsonFlag("params", params)
			if err != nil {
				return err
			}
			body["default_params"] = p
		}
		return c.post(ctx, out, definitionsPath, body)
	})
	fl := addCmd.Flags()
	fl.StringVar(&d.taskType, "task-type", "", "registered task type (sleep, shell, httpcall, email, or a plugin's)")
	fl.StringVar(&params, "params", "", "default params, a JSON object")
	fl.StringVar(&d.descr, "description", "", "free text")
	fl.IntVar(&d.timeout, "timeout", 0, "seconds before a run is stopped (0 = none)")
	fl.IntVar(&d.attempts, "max-attempts", 1, "attempts per job, retries included")
	fl.IntVar(&d.backoff, "retry-backoff", 10, "seconds between attempts")
	fl.StringVar(&d.notifyOn, "notify-on", "never", "email on never, failure, success or always")
	fl.StringVar(&d.emails, "notify-emails", "", "comma-separated addresses")
	fl.BoolVar(&d.recovery, "requests-recovery", true, "run a job cut off by the loss of its node again without using an attempt (false: fail it)")
	fl.IntVar(&d.priority, "priority", models.PriorityDefault, priorityUsage)
	d.registerLimits(addCmd)
	_ = addCmd.MarkFlagRequired("task-type") // so task_type is always sent

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List job definitions, newest first",
		Args:  cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			q := pf.query()
			if listByName != "" {
				q.Set("name", listByName)
			}
			return list(ctx, c, out, definitionsPath, q,
				[]string{"ID", "NAME", "TASK TYPE", "MAX ATTEMPTS", "TIMEOUT", "NOTIFY", "PRIORITY", "DESCRIPTION"},
				func(d *definitionRow) []string {
					return []string{itoa(d.ID), d.Name, d.TaskType, strconv.Itoa(d.MaxAttempts), strconv.Itoa(d.TimeoutSeconds) + "s",
						string(d.NotifyOn), strconv.Itoa(d.Priority), str(d.Description)}
				})
		}),
	}
	pf.register(listCmd)
	listCmd.Flags().StringVar(&listByName, "name", "", "only the definition with this name")

	showCmd := &cobra.Command{
		Use: "show ID|NAME", Short: "Show a job definition", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, definitionsPath, "job definition", args[0])
			if err != nil {
				return err
			}
			return c.show(ctx, out, definitionsPath+"/"+id)
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete ID|NAME", Short: "Delete a job definition no schedule or unfinished job uses", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, definitionsPath, "job definition", args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", definitionsPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted job definition %s\n", id)
			return nil
		}),
	}
	cmd.AddCommand(addCmd, newDefinitionEditCommand(f), listCmd, showCmd, deleteCmd)
	return cmd
}

func newScheduleCommand() *cobra.Command {
	cmd, f := adminGroup("schedule", "Manage schedules (when to run a definition)",
		"A schedule fires jobs of a job definition on a cron expression, a fixed interval, or once.")
	cmd.Aliases = []string{"schedules", "sched"}

	var (
		def, cron, every, at, tz, start, end, misfire, concurrency, params string
		syntax, dst, calendar, workflow                                    string
		maxRuns, catchup, priority                                         int
		paused, dryRun                                                     bool
	)
	addCmd := &cobra.Command{
		Use:   "add NAME (--definition ID|NAME | --workflow NAME) (--cron EXPR | --every DURATION | --at TIME) [flags]",
		Short: "Create a schedule (or preview it with --dry-run)",
		Example: `  chime schedule add weekday-report --definition report --cron "0 9 * * MON-FRI" --timezone Europe/Paris
  chime schedule add poll --definition ping --every 30s
  chime schedule add migrate-once --definition migrate --at 2030-01-01T02:00:00Z
  chime schedule add try --definition report --cron "*/15 * * * *" --dry-run
  chime schedule add month-end --definition report --cron "0 15 10 ? * 6L" --cron-syntax quartz --calendar holidays
  chime schedule add nightly-etl --workflow etl --cron "0 2 * * *" --concurrency forbid --params '{"day":"yesterday"}'`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			body := map[string]any{"name": args[0]}
			specs := map[string]string{"cron": cron, "every": every, "at": at}
			kinds := givenSpecs(func(fl string) bool { return specs[fl] != "" })
			if len(kinds) != 1 {
				return errors.New("give exactly one of --cron, --every or --at")
			}
			if err := setSpec(body, kinds[0], cron, every, at); err != nil {
				return err
			}
			for flag, v := range map[string]string{"timezone": tz, "start_at": start, "end_at": end, "misfire_policy": misfire, "concurrency": concurrency,
				"cron_syntax": syntax, "dst_policy": dst, "calendar": calendar} {
				if v != "" {
					body[flag] = v
				}
			}
			if maxRuns > 0 {
				body["max_runs"] = maxRuns
			}
			if catchup >= 0 {
				body["catchup_window_seconds"] = catchup
			}
			if paused {
				body["status"] = models.SchedulePaused
			}
			if priority != 0 {
				body["priority"] = priority
			}
			if params != "" {
				p, err := jsonFlag("params", params)
				if err != nil {
					return err
				}
				body["params"] = p
			}
			if (def == "") == (workflow == "") {
				return errors.New("give exactly one of --definition or --workflow")
			}
			if workflow != "" {
				// The API resolves the name; a run's params go to every step.
				body["workflow"] = workflow
			} else {
				id, err := c.resolve(ctx, definitionsPath, "job definition", def)
				if err != nil {
					return err
				}
				body["job_definition_id"], _ = strconv.ParseInt(id, 10, 64)
			}
			q := url.Values{}
			if dryRun {
				q.Set("dry_run", "true")
			}
			var raw json.RawMessage
			if err := c.do(ctx, "POST", schedulesPath, q, body, &raw); err != nil {
				return err
			}
			if !dryRun || c.output == "json" {
				return c.printRow(out, raw)
			}
			var v api.ScheduleView
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("decode schedule: %w", err)
			}
			return printFires(out, &v)
		}),
	}
	fl := addCmd.Flags()
	fl.StringVar(&def, "definition", "", "job definition to run, by id or name")
	fl.StringVar(&workflow, "workflow", "", "workflow to start a run of at each fire, by name, instead of a definition's job (docs/workflows.md)")
	fl.StringVar(&cron, "cron", "", `cron expression: 5 fields, 6 with seconds, or "@daily", "@every 5m" (a Quartz one needs --cron-syntax quartz)`)
	fl.StringVar(&every, "every", "", "fixed interval, such as 30s, 5m, 1h")
	fl.StringVar(&at, "at", "", "run once at this RFC 3339 time")
	fl.StringVar(&tz, "timezone", "", "IANA time zone of the cron expression (default UTC)")
	fl.StringVar(&start, "start-at", "", "no fire before this RFC 3339 time")
	fl.StringVar(&end, "end-at", "", "no fire after this RFC 3339 time")
	fl.IntVar(&maxRuns, "max-runs", 0, "stop after this many fires (0 = no limit)")
	fl.StringVar(&misfire, "misfire-policy", "", "fire_once (default), skip or fire_all")
	fl.IntVar(&catchup, "catchup-window", -1, "seconds: missed fires older than this are dropped; -1 = no bound")
	fl.StringVar(&concurrency, "concurrency", "", "allow (default) or forbid overlapping jobs")
	fl.StringVar(&params, "params", "", "params merged over the definition's defaults, a JSON object")
	fl.BoolVar(&paused, "paused", false, "create it paused")
	fl.BoolVar(&dryRun, "dry-run", false, "validate and print the next fire times without saving")
	fl.StringVar(&syntax, "cron-syntax", "", "standard (default) or quartz (Quartz 2.3.2 cron: 6-7 fields, ?, L, W, #, 1 = Sunday)")
	fl.StringVar(&dst, "dst-policy", "", "standard cron across DST changes: once (default), skip, both or wall (docs/quartz.md)")
	fl.StringVar(&calendar, "calendar", "", "calendar whose excluded times are skipped, by name")
	fl.IntVar(&priority, "priority", 0, "priority of its jobs, 1 (lowest) to 10 (highest); 0 = the definition's")

	var (
		pf                         pageFlags
		listStatus, listDefinition string
	)
	listCmd := &cobra.Command{
		Use: "list", Short: "List schedules, newest first, with their next fire time", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			q := pf.query()
			if listStatus != "" {
				q.Set("status", listStatus)
			}
			if listDefinition != "" {
				id, err := c.resolve(ctx, definitionsPath, "job definition", listDefinition)
				if err != nil {
					return err
				}
				q.Set("job_definition_id", id)
			}
			nm := newNames(ctx, c)
			return list(ctx, c, out, schedulesPath, q,
				[]string{"ID", "NAME", "DEFINITION", "TYPE", "SPEC", "TIMEZONE", "STATUS", "PRIORITY", "NEXT FIRE"},
				func(s *scheduleRow) []string {
					next := "-"
					switch {
					case s.Status == models.SchedulePaused:
						// Its next fire times are what it would do; resuming
						// writes the missed ones as misfire_policy says.
						next = "- (paused)"
					case s.Status != models.ScheduleActive:
					case len(s.NextFires) > 0:
						next = timeCell(&s.NextFires[0])
					}
					prio := "-" // the definition's
					if s.Priority != nil {
						prio = strconv.Itoa(*s.Priority)
					}
					target := nm.definition(s.JobDefinitionID).name
					if s.WorkflowID != nil {
						target = "workflow " + itoa(*s.WorkflowID)
					}
					return []string{itoa(s.ID), s.Name, target, string(s.ScheduleType), spec(&s.Schedule),
						s.Timezone, string(s.Status), prio, next}
				})
		}),
	}
	pf.register(listCmd)
	listCmd.Flags().StringVar(&listStatus, "status", "", "only active, paused, completed or invalid schedules")
	listCmd.Flags().StringVar(&listDefinition, "definition", "", "only schedules of this job definition (id or name)")

	byID := func(use, short string, act func(ctx context.Context, c *client, out io.Writer, id string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " ID|NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
				id, err := c.resolve(ctx, schedulesPath, "schedule", args[0])
				if err != nil {
					return err
				}
				return act(ctx, c, out, id)
			}),
		}
	}
	action := func(verb string) func(ctx context.Context, c *client, out io.Writer, id string) error {
		return func(ctx context.Context, c *client, out io.Writer, id string) error {
			return c.post(ctx, out, schedulesPath+"/"+id+"/"+verb, nil)
		}
	}
	var triggerPriority int
	triggerCmd := byID("trigger", "Fire a schedule now (prints the job written)", func(ctx context.Context, c *client, out io.Writer, id string) error {
		var body any
		if triggerPriority != 0 {
			body = map[string]any{"priority": triggerPriority}
		}
		return c.post(ctx, out, schedulesPath+"/"+id+"/trigger", body)
	})
	triggerCmd.Flags().IntVar(&triggerPriority, "priority", 0, "this job's priority, 1 (lowest) to 10 (highest); 0 = the schedule's")
	cmd.AddCommand(addCmd, newScheduleEditCommand(f), listCmd,
		byID("show", "Show a schedule, its next fire times and, when paused, the catch-up a resume writes", func(ctx context.Context, c *client, out io.Writer, id string) error {
			return c.show(ctx, out, schedulesPath+"/"+id)
		}),
		withLong(byID("pause", "Pause a schedule: no fires until resumed (see --help for what resuming writes)", action("pause")),
			`Pause a schedule: it fires nothing until resumed. The fires it misses while
paused are missed fires: on resume they follow its misfire_policy, so under
the default fire_once one catch-up job is written at once for all of them
(skip writes none; fire_all writes each, up to fire_all_cap), and
catchup_window_seconds drops those older than the window. To resume without
a catch-up, set --misfire-policy skip with chime schedule edit first.`),
		withLong(byID("resume", "Resume a paused schedule (fires missed while paused follow misfire_policy)", action("resume")),
			`Resume a paused schedule. The fires it missed while paused follow its
misfire_policy: under the default fire_once, one catch-up job is written at
once (catch_up = true, missed_fires = how many); skip writes none. chime
schedule show says beforehand which catch-up a resume now would write
(catch_up_on_resume).`),
		triggerCmd,
		byID("delete", "Delete a schedule (its jobs stay)", func(ctx context.Context, c *client, out io.Writer, id string) error {
			if err := c.do(ctx, "DELETE", schedulesPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted schedule %s\n", id)
			return nil
		}),
	)
	return cmd
}

// spec is the schedule's trigger in one cell.
func spec(s *models.Schedule) string {
	switch {
	case s.CronExpr != nil && s.CronSyntax == models.SyntaxQuartz:
		return *s.CronExpr + " (quartz)"
	case s.CronExpr != nil:
		return *s.CronExpr
	case s.IntervalSeconds != nil:
		d, err := models.IntervalBound.Duration(int64(*s.IntervalSeconds))
		if err != nil {
			return fmt.Sprintf("every %ds (out of range)", *s.IntervalSeconds)
		}
		return "every " + d.String()
	case s.RunAt != nil:
		return "at " + timeCell(s.RunAt)
	}
	return "-"
}

// printFires is the --dry-run answer: each fire in UTC and in the
// schedule's own zone, which is what an admin checks a cron against.
func printFires(out io.Writer, v *api.ScheduleView) error {
	loc, err := time.LoadLocation(v.Timezone)
	if err != nil {
		loc = time.UTC
	}
	fmt.Fprintf(out, "schedule %q is valid (not saved). Next fire times:\n", v.Name)
	if len(v.NextFires) == 0 {
		fmt.Fprintln(out, "  none: it would never fire")
		return nil
	}
	rows := make([][]string, len(v.NextFires))
	for i, t := range v.NextFires {
		rows[i] = []string{t.UTC().Format(time.RFC3339), t.In(loc).Format("Mon 2006-01-02 15:04:05 MST")}
	}
	return table(out, []string{"UTC", strings.ToUpper(v.Timezone)}, rows)
}

func newJobCommand() *cobra.Command {
	cmd, f := adminGroup("job", "Inspect and control jobs (runs of a definition)",
		"A job is one fire of a schedule or one ad hoc run. Control actions are carried out by the node running the job within a few seconds.")
	cmd.Aliases = []string{"jobs"}

	var (
		pf                                       pageFlags
		status, schedule, definition, since, til string
	)
	listCmd := &cobra.Command{
		Use: "list", Short: "List jobs, newest first", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			q := pf.query()
			for k, v := range map[string]string{"status": status, "since": since, "until": til} {
				if v != "" {
					q.Set(k, v)
				}
			}
			for _, r := range []struct{ arg, path, what, key string }{
				{schedule, schedulesPath, "schedule", "schedule_id"}, {definition, definitionsPath, "job definition", "job_definition_id"},
			} {
				if r.arg == "" {
					continue
				}
				id, err := c.resolve(ctx, r.path, r.what, r.arg)
				if err != nil {
					return err
				}
				q.Set(r.key, id)
			}
			nm := newNames(ctx, c)
			return list(ctx, c, out, jobsPath, q,
				[]string{"ID", "SCHEDULE", "DEFINITION", "STATUS", "CONTROL", "ATTEMPT", "SCHEDULED AT", "STARTED", "FINISHED", "NODE"},
				func(j *jobRow) []string {
					return []string{itoa(j.ID), nm.schedule(j.ScheduleID), nm.definition(j.JobDefinitionID).name, jobStatusCell(j), str(string(j.Control)),
						nm.attempts(j), timeCell(&j.ScheduledAt), timeCell(j.StartedAt), timeCell(j.FinishedAt), str(j.NodeID)}
				})
		}),
	}
	pf.register(listCmd)
	lf := listCmd.Flags()
	lf.StringVar(&status, "status", "", "only jobs in this status (pending, queued, running, paused, succeeded, failed, stopped, canceled)")
	lf.StringVar(&schedule, "schedule", "", "only jobs of this schedule (id or name)")
	lf.StringVar(&definition, "definition", "", "only jobs of this job definition (id or name)")
	lf.StringVar(&since, "since", "", "only jobs scheduled at or after this RFC 3339 time")
	lf.StringVar(&til, "until", "", "only jobs scheduled before this RFC 3339 time")

	jobArg := func(use, short string, act func(ctx context.Context, c *client, out io.Writer, id string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
				if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
					return fmt.Errorf("job id %q: want a number", args[0])
				}
				return act(ctx, c, out, args[0])
			}),
		}
	}
	control := func(verb string) func(ctx context.Context, c *client, out io.Writer, id string) error {
		return func(ctx context.Context, c *client, out io.Writer, id string) error {
			return c.post(ctx, out, jobsPath+"/"+id+"/"+verb, nil)
		}
	}
	logsCmd := newLogsCommand(f)

	var runParams, runAt string
	var runPriority int
	runCmd := &cobra.Command{
		Use:   "run DEFINITION [--params JSON] [--at TIME]",
		Short: "Run a job definition now (ad hoc), with optional params",
		Example: `  chime job run nightly-backup
  chime job run report --params '{"month":"2025-01"}'`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, definitionsPath, "job definition", args[0])
			if err != nil {
				return err
			}
			defID, _ := strconv.ParseInt(id, 10, 64)
			body := map[string]any{"job_definition_id": defID}
			if runParams != "" {
				p, err := jsonFlag("params", runParams)
				if err != nil {
					return err
				}
				body["params"] = p
			}
			if runAt != "" {
				body["run_at"] = runAt
			}
			if runPriority != 0 {
				body["priority"] = runPriority
			}
			return c.post(ctx, out, jobsPath, body)
		}),
	}
	runCmd.Flags().StringVar(&runParams, "params", "", "params merged over the definition's defaults, a JSON object")
	runCmd.Flags().StringVar(&runAt, "at", "", "run at this RFC 3339 time instead of now")
	runCmd.Flags().IntVar(&runPriority, "priority", 0, "this job's priority, 1 (lowest) to 10 (highest); 0 = the definition's")

	var forceReset bool
	resetCmd := jobArg("reset", "Put a job stuck in queued, running or paused back to pending (admin repair)",
		func(ctx context.Context, c *client, out io.Writer, id string) error {
			var q url.Values
			if forceReset {
				q = url.Values{"force": {"true"}}
			}
			var raw json.RawMessage
			if err := c.do(ctx, "POST", jobsPath+"/"+id+"/reset", q, nil, &raw); err != nil {
				return err
			}
			return c.printRow(out, raw)
		})
	resetCmd.Long = `Put a job stuck in queued, running or paused back to pending, for another
attempt. Refused while the job's node is alive and the job was heard from
within the failover window: the running attempt would go on beside the new
one. --force is for a job stuck on a live node: it asks the job to stop,
waits up to 15s for the node to act, then resets what is left.`
	resetCmd.Flags().BoolVar(&forceReset, "force", false, "reset a job a live node still runs, after asking it to stop")

	cmd.AddCommand(listCmd,
		jobArg("show", "Show a job", func(ctx context.Context, c *client, out io.Writer, id string) error {
			return c.show(ctx, out, jobsPath+"/"+id)
		}),
		logsCmd,
		jobArg("pause", "Ask the running node to pause a job", control("pause")),
		jobArg("resume", "Ask the running node to resume a paused job", control("resume")),
		jobArg("stop", "Stop a job (a pending one is canceled at once)", control("stop")),
		resetCmd,
		runCmd,
	)
	return cmd
}

// jobStatusCell is the job's status with the typed outcome its task chose,
// if any: "failed (skip_retry)", "pending (snoozed)", "canceled (by task)".
func jobStatusCell(j *jobRow) string {
	switch j.Outcome {
	case models.OutcomeNone:
		return string(j.Status)
	case models.OutcomeCanceled:
		return string(j.Status) + " (by task)"
	}
	return string(j.Status) + " (" + inertCell(string(j.Outcome)) + ")"
}

func withLong(cmd *cobra.Command, long string) *cobra.Command {
	cmd.Long = long
	return cmd
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func newCalendarCommand() *cobra.Command {
	cmd, f := adminGroup("calendar", "Manage calendars (times schedules skip)",
		"A calendar excludes times from the schedules that name it (--calendar): a fire in an excluded time is skipped, "+
			"neither run nor counted missed. Kinds are Quartz's: holiday, annual, monthly, weekly, daily and cron; docs/quartz.md "+
			"gives each kind's --definition.")
	cmd.Aliases = []string{"calendars", "cal"}

	var kind, def, tz, descr string
	addCmd := &cobra.Command{
		Use:   "add NAME --kind KIND --definition JSON [--timezone ZONE]",
		Short: "Create a calendar",
		Example: `  chime calendar add holidays --kind holiday --definition '{"dates": ["2030-12-25", "2031-01-01"]}' --timezone Europe/Berlin
  chime calendar add weekends --kind weekly --definition '{"days": ["sat", "sun"]}'
  chime calendar add office-hours --kind daily --definition '{"from": "09:00", "to": "17:00"}'
  chime calendar add nights --kind cron --definition '{"expression": "* * 0-5 ? * *"}'`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			d, err := jsonFlag("definition", def)
			if err != nil {
				return err
			}
			body := map[string]any{"name": args[0], "kind": kind, "definition": d, "description": descr}
			if tz != "" {
				body["timezone"] = tz
			}
			var raw json.RawMessage
			if err := c.do(ctx, "POST", calendarsPath, nil, body, &raw); err != nil {
				return err
			}
			return c.printRow(out, raw)
		}),
	}
	fl := addCmd.Flags()
	fl.StringVar(&kind, "kind", "", "holiday, annual, monthly, weekly, daily or cron")
	fl.StringVar(&def, "definition", "", "the kind's definition, a JSON object (see docs/quartz.md)")
	fl.StringVar(&tz, "timezone", "", "IANA zone its days and wall times are read in (default UTC)")
	fl.StringVar(&descr, "description", "", "free text")
	_ = addCmd.MarkFlagRequired("kind")

	listCmd := &cobra.Command{
		Use: "list", Short: "List calendars by name", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, calendarsPath, nil, []string{"ID", "NAME", "KIND", "TIMEZONE", "DEFINITION"},
				func(k *models.Calendar) []string {
					return []string{itoa(k.ID), k.Name, string(k.Kind), k.Timezone, str(string(k.Definition))}
				})
		}),
	}
	showCmd := &cobra.Command{
		Use: "show ID|NAME", Short: "Show a calendar", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, calendarsPath, "calendar", args[0])
			if err != nil {
				return err
			}
			return c.show(ctx, out, calendarsPath+"/"+id)
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete ID|NAME", Short: "Delete a calendar no schedule names", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, calendarsPath, "calendar", args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", calendarsPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted calendar %s\n", id)
			return nil
		}),
	}
	cmd.AddCommand(addCmd, listCmd, showCmd, deleteCmd)
	return cmd
}
