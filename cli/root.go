// Package cli is chime's command line: serve, migrate and version, and the
// admin commands that talk to a running server's API. cmd/chime is a thin
// main around it, and so is any program that builds chime with its own task
// plugins.
//
// cli may import app and every package app imports.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/logging"
)

// Main runs the chime command line with os.Args and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := NewRootCommand()
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chime:", inert(err.Error(), false))
		return exitCode(err)
	}
	return 0
}

type globals struct {
	configFile string
	logFormat  string
	logLevel   string
}

// NewRootCommand returns the chime command tree.
func NewRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "chime",
		Short:         "chime is a job scheduler: schedules fire jobs, jobs run tasks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// The configuration flags belong to the commands that read the
	// configuration; the admin commands talk to a server and take its
	// URL and token instead.
	server := []*cobra.Command{newServeCommand(g), newMigrateCommand(g), newBenchCommand(g), newImportCommand(g)}
	for _, c := range server {
		g.register(c)
	}
	root.AddCommand(server...)
	root.AddCommand(newVersionCommand(), newCronCommand())
	root.AddCommand(adminCommands()...)
	return root
}

func (g *globals) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&g.configFile, "config", "", "configuration file (YAML; the embedded default is configs/chime.yaml); CHIME_* variables override it")
	pf.StringVar(&g.logFormat, "log-format", "", "text or json (overrides log.format)")
	pf.StringVar(&g.logLevel, "log-level", "", "trace, debug, info, warn or error (overrides log.level)")
}

// envHelp lists the environment variables a server-side command reads,
// one per configuration key, for --help.
func envHelp() string {
	var b strings.Builder
	b.WriteString("Environment (each overrides the key of the same path in chime.yaml; see the README's table):\n")
	line := " "
	for _, k := range configs.Keys() {
		name := " " + configs.EnvName(k)
		if len(line)+len(name) > 78 {
			b.WriteString(line + "\n")
			line = " "
		}
		line += name
	}
	b.WriteString(line)
	return b.String()
}

// load reads configuration and builds the logger for a server-side command.
func (g *globals) load(stderr io.Writer) (*configs.Config, *logrus.Logger, error) {
	cfg, err := configs.Load(g.configFile, nil)
	if err != nil {
		return nil, nil, err
	}
	// A flag is set for this process on purpose: configurations rows must
	// not change it, as they do not change CHIME_* variables.
	if g.logFormat != "" {
		cfg.Log.Format = g.logFormat
		cfg.Pin("log.format")
	}
	if g.logLevel != "" {
		cfg.Log.Level = g.logLevel
		cfg.Pin("log.level")
	}
	log, err := logging.New(stderr, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		return nil, nil, err
	}
	// A misspelt variable would otherwise leave its key at the default
	// without a word. A warning, not an error: the environment may hold
	// CHIME_* variables of other tools or other chime versions.
	for _, w := range configs.UnknownEnv(os.Environ()) {
		log.Warn(w.String())
	}
	return cfg, log, nil
}

func newServeCommand(g *globals) *cobra.Command {
	var noMigrate, scheduler, worker bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a chime node: schedule engine, task engine and API",
		Long: `Run a chime node until SIGINT or SIGTERM. Both engines run by default;
--scheduler=false makes a worker-only node and --worker=false a scheduler-only
node, so a cluster can split the roles.

Without configuration it runs on the SQLite file chime.db in the working
directory, serves the API on 127.0.0.1:8080 and writes its token to
~/.config/chime/api.token (CHIME_API_TOKEN_FILE), where the CLI finds it.

` + envHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("scheduler") {
				cfg.ScheduleEngine.Enabled = scheduler
				cfg.Pin("scheduleengine.enabled")
			}
			if cmd.Flags().Changed("worker") {
				cfg.TaskEngine.Enabled = worker
				cfg.Pin("taskengine.enabled")
			}
			return app.Serve(cmd.Context(), cfg, app.Options{NoMigrate: noMigrate, Logger: log})
		},
	}
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", false, "do not apply migrations at start")
	cmd.Flags().BoolVar(&scheduler, "scheduler", true, "run the schedule engine (overrides scheduleengine.enabled)")
	cmd.Flags().BoolVar(&worker, "worker", true, "run the task engine (overrides taskengine.enabled)")
	return cmd
}

func newMigrateCommand(g *globals) *cobra.Command {
	var status, dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded schema migrations (idempotent)",
		Long: `Apply the embedded schema migrations that the database has not had yet
(goose_db_version records them). Prints each one it applies, such as
"applied 00012_priorities", then the schema version; "up to date, no
migration needed" when there was none. chime serve applies them too at
start, unless --no-migrate, and logs the same.

--status lists every embedded migration as applied or pending, and any
version the database has that this chime does not know; --dry-run lists
the migrations a real run would apply, in order. Neither writes to the
database. A database migrated by a newer chime is refused, as chime serve
refuses it, unless database.compatible_schema declares it compatible
(docs/operations.md, "Upgrades").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if status || dryRun {
				if status && dryRun {
					return usagef("--status and --dry-run: give one")
				}
				return printSchemaStatus(cmd, cfg, log, dryRun)
			}
			res, err := app.Migrate(cmd.Context(), cfg, log)
			out := cmd.OutOrStdout()
			// Those applied before a failure are applied: say so too.
			for _, m := range res.Applied {
				fmt.Fprintf(out, "applied %s\n", m)
			}
			if err != nil {
				return err
			}
			if len(res.Applied) == 0 {
				fmt.Fprintf(out, "schema version %d (%s): up to date, no migration needed\n", res.Version, cfg.Database.Driver)
				return nil
			}
			plural := "s"
			if len(res.Applied) == 1 {
				plural = ""
			}
			fmt.Fprintf(out, "schema version %d (%s): applied %d migration%s\n", res.Version, cfg.Database.Driver, len(res.Applied), plural)
			return nil
		},
	}
	cmd.Flags().BoolVar(&status, "status", false, "list each migration as applied or pending; change nothing")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the migrations a run would apply; change nothing")
	return cmd
}

// printSchemaStatus is migrate --status and --dry-run. A newer schema is
// reported, and fails the command as a real run would, so a script that
// checks before an upgrade stops there.
func printSchemaStatus(cmd *cobra.Command, cfg *configs.Config, log *logrus.Logger, dryRun bool) error {
	st, err := app.SchemaStatus(cmd.Context(), cfg, log)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !dryRun {
		for _, m := range st.Migrations {
			state := "pending"
			if m.Applied {
				state = "applied"
			}
			fmt.Fprintf(out, "%-8s %s\n", state, m)
		}
		for _, v := range st.Unknown {
			fmt.Fprintf(out, "%-8s %05d (not in this chime: a newer chime applied it)\n", "unknown", v)
		}
	}
	pending := st.Pending()
	if dryRun {
		for _, m := range pending {
			fmt.Fprintf(out, "would apply %s\n", m)
		}
	}
	fmt.Fprintf(out, "schema version %d (%s); this chime knows up to %d; %d pending\n",
		st.Version, cfg.Database.Driver, st.Known, len(pending))
	return app.SchemaAllowed(st, cfg, log)
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print chime's version, commit, build date, Go release and known schema",
		Long: `Print which chime this binary is: its version (v0.1.0, or dev for a build
no release stamped), the commit and date it was built from, the Go release
that built it, and "schema": the newest migration it embeds. A node refuses
to start against a database whose schema is newer than that (see
docs/operations.md, "Upgrades"). A running node answers the same at
GET /api/v1/version.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := app.Build()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(in)
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), in.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the fields of GET /api/v1/version)")
	return cmd
}
