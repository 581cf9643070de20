package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
)

const configurationsPath = api.Prefix + "/configurations"

func newConfigCommand() *cobra.Command {
	cmd, f := adminGroup("config", "List, show and set configurations rows (settings shared by every node)",
		`A configurations row sets a chime.yaml key for every node: the live keys
(log.level, taskengine.pool_size, taskengine.poll_interval, retention_days,
smtp.*) apply within scheduleengine.sync_interval, the others at restart.
node.*, api.* and database.* are set only by the file or the environment.
Secrets (smtp.password) can be set, and are shown as ********.`)
	cmd.Aliases = []string{"configuration", "configurations"}

	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List every configurations row", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, configurationsPath, nil, []string{"NAME", "VALUE", "DESCRIPTION", "UPDATED"},
				func(r *models.Configuration) []string {
					// The server redacts; so does the CLI, whatever server it talks to.
					return []string{r.Name, str(configs.RedactValue(r.Name, r.Value)), str(r.Description), timeCell(&r.UpdatedAt)}
				})
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use: "get NAME", Short: "Show one configurations row", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			return c.show(ctx, out, configurationsPath+"/"+url.PathEscape(args[0]))
		}),
	})
	var description string
	set := &cobra.Command{
		Use: "set NAME VALUE [--description TEXT]", Short: "Create or replace a configurations row", Args: cobra.ExactArgs(2),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			body := map[string]any{"value": args[1]}
			if description != "" {
				body["description"] = description
			}
			var raw json.RawMessage
			if err := c.do(ctx, "PUT", configurationsPath+"/"+url.PathEscape(args[0]), nil, body, &raw); err != nil {
				return err
			}
			return c.printRow(out, raw)
		}),
	}
	set.Flags().StringVar(&description, "description", "", "what the setting is for (kept when left out)")
	cmd.AddCommand(set)
	return cmd
}
