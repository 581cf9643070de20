package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/quartzcron"
	"github.com/chimesched/chime/trigger"
	"github.com/chimesched/chime/validate"
)

// Cron syntaxes a schedule can be written in.
const (
	syntaxStandard = "standard"
	syntaxQuartz   = "quartz"
)

const maxCronCount = 1000

// usageError is a command line chime refuses before doing anything (a bad
// expression, zone or flag value): Main exits with code 2 for it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode is the process exit code for an error a command returned.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

func newCronCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cron",
		Short: "Cron expression tools (no server needed)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCronNextCommand())
	return cmd
}

func newCronNextCommand() *cobra.Command {
	var syntax, zone, from, dst, calFile string
	var count int
	cmd := &cobra.Command{
		Use:   "next EXPR",
		Short: "Print the next fire times of a cron expression, one RFC3339 time per line",
		Long: `Print the next fire times of a cron expression, one RFC3339 time per line, in
the --timezone zone. No server is needed.

--syntax standard (the default) reads EXPR as a schedule's cron_expr does:
5 fields, 6 with seconds first, descriptors such as @daily and @every 5m;
day-of-week 0-6 counts from Sunday. It refuses ?, L, W, # and a seventh
field, which only Quartz has, and says so. --syntax quartz reads it as Quartz 2.3.2
does: 6 or 7 fields (seconds first, an optional year last), ?, L, W, #, and
day-of-week 1-7 counting from Sunday (so 1 is Sunday here, Monday in
standard). See docs/quartz.md.

--dst picks the standard syntax's daylight-saving policy (a schedule's
dst_policy, default once: a wall time a change skips fires just after it, a
repeated one fires once). --calendar-file skips the times a calendar
excludes; the file is a calendar as "chime calendar show NAME -o json"
prints it, or {"kind": ..., "definition": ..., "timezone": ...}.

An invalid expression, zone or flag exits with code 2. When the expression
fires no more after --from, nothing is printed on standard output and
"no fire time after TIME" on standard error, with code 0.`,
		Example: `  chime cron next '0 15 10 ? * 6L' --syntax quartz --timezone Europe/Berlin
  chime cron next '*/10 * * * *' --from 2030-01-01T00:00:00Z --count 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			expr := strings.TrimSpace(args[0])
			if count < 1 || count > maxCronCount {
				return usagef("--count must be between 1 and %d, got %d", maxCronCount, count)
			}
			if zone == "" {
				zone = "UTC"
			}
			// A schedule's own rule: the preview reads the zone as the engine would.
			loc, err := validate.Timezone(zone)
			if err != nil {
				return usagef("--timezone: %v", err)
			}
			start := time.Now()
			if from != "" {
				if start, err = time.Parse(time.RFC3339, from); err != nil {
					return usagef("--from %q is not an RFC3339 time such as 2030-01-01T09:00:00Z", from)
				}
			}
			var trig trigger.Trigger
			switch syntax {
			case syntaxStandard:
				// The same function the API previews next_fires with.
				s := &models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: zone, CreatedAt: start,
					DSTPolicy: models.DSTPolicy(dst)}
				if trig, err = trigger.New(s, nil); err != nil {
					if q, ok := errors.AsType[*trigger.QuartzSyntaxError](err); ok {
						return usagef("invalid standard cron expression %q: %s", expr, q.Explain("add --syntax quartz"))
					}
					return usagef("invalid standard cron expression: %v", err)
				}
			case syntaxQuartz:
				if dst != string(models.DSTOnce) {
					return usagef("--dst applies to --syntax standard; Quartz syntax follows Quartz's own daylight-saving rules")
				}
				if trig, err = quartzcron.Parse(expr, loc); err != nil {
					return usagef("invalid Quartz cron expression %q: %v", expr, err)
				}
			default:
				return usagef("unknown --syntax %q (want standard or quartz)", syntax)
			}
			if calFile != "" {
				if trig, err = withCalendarFile(trig, calFile); err != nil {
					return err
				}
			}
			fires := api.NextFires(trig, start, count)
			out := cmd.OutOrStdout()
			for _, t := range fires {
				fmt.Fprintln(out, t.In(loc).Format(time.RFC3339))
			}
			if len(fires) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "no fire time after %s\n", start.In(loc).Format(time.RFC3339))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&syntax, "syntax", syntaxStandard, "standard or quartz")
	f.StringVar(&zone, "timezone", "UTC", "IANA zone the expression's wall times are read in")
	f.StringVar(&from, "from", "", "RFC3339 time to start after (default now)")
	f.StringVar(&dst, "dst", string(models.DSTOnce), "standard syntax: once, skip, both or wall (a schedule's dst_policy)")
	f.StringVar(&calFile, "calendar-file", "", "JSON file of a calendar (as chime calendar show prints it) whose excluded times are skipped")
	f.IntVar(&count, "count", 5, fmt.Sprintf("how many fire times (1-%d)", maxCronCount))
	return cmd
}

// maxCalendarFile bounds what --calendar-file reads.
const maxCalendarFile = 1 << 20

// withCalendarFile wraps trig with the calendar in file, as a schedule
// naming it would be.
func withCalendarFile(trig trigger.Trigger, file string) (trigger.Trigger, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, usagef("--calendar-file: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCalendarFile+1))
	if err != nil {
		return nil, usagef("--calendar-file: %v", err)
	}
	if len(b) > maxCalendarFile {
		return nil, usagef("--calendar-file: larger than %d bytes", maxCalendarFile)
	}
	var c models.Calendar
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, usagef("--calendar-file: not a calendar in JSON: %v", err)
	}
	cal, err := trigger.ParseCalendar(&c)
	if err != nil {
		return nil, usagef("--calendar-file: %v", err)
	}
	return trigger.WithCalendar(trig, cal), nil
}
