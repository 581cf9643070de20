package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/quartzimport"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
)

// newImportCommand is `chime import`, which writes into the configured
// database like migrate and bench: an import is a batch of admin writes
// that should not depend on a running node, and on MySQL or PostgreSQL the
// nodes pick the new rows up at their next sync.
func newImportCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import schedules from another scheduler into the configured database",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newImportQuartzCommand(g))
	return cmd
}

var registerBuiltins sync.Mutex

// importRegistry is the registry serve would run: tasks.Default() (where a
// program built on cli.Main registers its plugins) with the built-in tasks.
// The import only checks task types and params with it; nothing runs.
func importRegistry() (*tasks.Registry, error) {
	registerBuiltins.Lock()
	defer registerBuiltins.Unlock()
	reg := tasks.Default()
	if !slices.Contains(reg.Kinds(), "sleep") {
		if err := builtin.Register(reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func newImportQuartzCommand(g *globals) *cobra.Command {
	var dsn, prefix, mapFile, defaultTask, scheduler string
	var dryRun, noMigrate bool
	cmd := &cobra.Command{
		Use:   "quartz --dsn DSN [--table-prefix QRTZ_] [--map FILE] [--default-task TYPE] [--scheduler NAME] [--dry-run]",
		Short: "Import a Quartz JDBC job store (MySQL/MariaDB): jobs, triggers and calendars",
		Long: `Reads the QRTZ_ tables of a Quartz 2.x JDBC job store on MySQL or MariaDB
(--dsn, a Go MySQL DSN: user:password@tcp(host:3306)/quartz) and writes into
chime's configured database (CHIME_DATABASE_*, --config):

  each JobDetail  -> a job definition GROUP.NAME; its task type from --map
                     (lines "com.acme.ReportJob: shell") or --default-task,
                     its default params the JobDataMap
  CRON, SIMPLE    -> a schedule GROUP.NAME of the trigger: quartz-syntax cron,
  triggers           interval or once, time zone, start/end, max_runs, paused,
                     calendar, misfire_policy; the first fire is Quartz's
                     NEXT_FIRE_TIME
  calendars       -> chime calendars of the same name

It prints one line per object (created, unchanged, conflict, not mapped and
why) and the totals. Objects are found by name, so a second run changes
nothing; a chime object of the same name that differs is left alone
(conflict). --dry-run checks everything and writes nothing. With SQLite,
stop the node first: its file is one process's at a time.

Exit status: 0 everything imported (or already there), 1 something was not
mapped or conflicts, 2 bad usage or an unreadable store (nothing written).
docs/quartz.md ("Moving from Quartz") has the whole mapping.

` + envHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dsn == "" {
				return usagef("--dsn is required (user:password@tcp(host:3306)/quartz)")
			}
			if err := quartzimport.CheckTablePrefix(prefix); err != nil {
				return usageError{err}
			}
			reg, err := importRegistry()
			if err != nil {
				return err
			}
			classes := map[string]string{}
			if mapFile != "" {
				f, err := os.Open(mapFile)
				if err != nil {
					return usagef("--map: %v", err)
				}
				classes, err = quartzimport.ParseClassMap(f, reg)
				_ = f.Close()
				if err != nil {
					return usageError{err}
				}
			}
			if defaultTask != "" {
				if _, err := reg.New(defaultTask); err != nil {
					return usagef("--default-task: %v", err)
				}
			}
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			src, err := quartzimport.OpenSource(ctx, dsn)
			if err != nil {
				return usageError{err}
			}
			defer src.Close()
			st, err := app.OpenStore(ctx, cfg, log)
			if err != nil {
				return err
			}
			defer st.Close()
			switch {
			case dryRun:
				// A dry run writes nothing, not even the schema.
				if v, err := st.SchemaVersion(ctx); err != nil || v == 0 {
					return usagef("chime's database (%s) has no schema yet: run chime migrate, or import without --dry-run (which migrates)", cfg.Database.Driver)
				}
			case !noMigrate:
				if _, err := st.Migrate(ctx); err != nil {
					return err
				}
			}
			// Written straight to the database, not through the API: the
			// audit log says so rather than show the database user.
			ctx = chimedb.WithActor(ctx, chimedb.Actor{Name: "chime import quartz", Door: models.AuditDoorCLI})
			rep, err := quartzimport.Import(ctx, src, st.Admin(), quartzimport.Options{TablePrefix: prefix, Scheduler: scheduler,
				ClassMap: classes, DefaultTask: defaultTask, DryRun: dryRun, Registry: reg})
			if rep != nil {
				if perr := rep.Print(cmd.OutOrStdout()); perr != nil && err == nil {
					err = perr
				}
			}
			switch {
			case errors.Is(err, quartzimport.ErrSource), errors.Is(err, quartzimport.ErrUsage):
				return usageError{err}
			case err != nil:
				return err
			case !rep.Complete():
				return fmt.Errorf("%d object(s) not mapped and %d conflict(s); see the report", rep.Count(quartzimport.NotMapped), rep.Count(quartzimport.Conflict))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "dsn", "", "the Quartz database, a Go MySQL DSN: user:password@tcp(host:3306)/quartz")
	f.StringVar(&prefix, "table-prefix", quartzimport.DefaultTablePrefix, "Quartz's org.quartz.jobStore.tablePrefix")
	f.StringVar(&mapFile, "map", "", `YAML file, one "java.class.Name: task_type" per line`)
	f.StringVar(&defaultTask, "default-task", "", "task type of job classes the map does not name (default: leave them out)")
	f.StringVar(&scheduler, "scheduler", "", "import only this SCHED_NAME (default: all; a name two schedulers use is not mapped)")
	f.BoolVar(&dryRun, "dry-run", false, "check and report, write nothing")
	f.BoolVar(&noMigrate, "no-migrate", false, "do not apply chime's migrations first")
	return cmd
}
