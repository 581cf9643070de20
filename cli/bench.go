package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/internal/bench"
)

func newBenchCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a real chime node on the configured database",
	}
	var opts bench.LatenessOptions
	lateness := &cobra.Command{
		Use:   "lateness",
		Short: "Schedules firing every second: how long after scheduled_at fires are written and jobs start",
		Long: `Creates --schedules schedules firing every second (a no-op sleep task),
runs a full node (both engines, the configured poll interval) for --duration,
stops it, and reports percentiles read back from the jobs table. Point it at an
empty database (CHIME_DATABASE_DSN): it refuses one that has schedules.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			r, err := bench.Lateness(cmd.Context(), cfg, log, opts)
			if err != nil {
				return err
			}
			r.Print(cmd.OutOrStdout())
			return nil
		},
	}
	lateness.Flags().IntVar(&opts.Schedules, "schedules", 1, "schedules firing every second")
	lateness.Flags().DurationVar(&opts.Duration, "duration", 30*time.Second, "how long to measure")
	cmd.AddCommand(lateness)
	return cmd
}
