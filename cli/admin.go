package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
)

// adminCommands returns the commands that manage a running chime through
// its API: definition, schedule, job, nodes and config.
func adminCommands() []*cobra.Command {
	return []*cobra.Command{newDefinitionCommand(), newScheduleCommand(), newCalendarCommand(), newJobCommand(), newNodesCommand(), newNodeCommand(), newConfigCommand(),
		newAlertCommand(), newWorkflowCommand(), newTokenCommand(), newQueueCommand(), newAuditCommand(), newSecretCommand()}
}

// adminGroup makes a parent command carrying the shared API flags.
func adminGroup(use, short, long string) (*cobra.Command, *clientFlags) {
	f := &clientFlags{}
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	f.register(cmd)
	return cmd, f
}

// runner adapts an admin action to cobra: it builds the client from the
// flags and passes the command's context and stdout.
func runner(f *clientFlags, fn func(ctx context.Context, c *client, out io.Writer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		return fn(cmd.Context(), c, cmd.OutOrStdout(), args)
	}
}

// show prints one row: all its fields, or the JSON with -o json.
func (c *client) show(ctx context.Context, out io.Writer, path string) error {
	var raw json.RawMessage
	if err := c.do(ctx, "GET", path, nil, nil, &raw); err != nil {
		return err
	}
	return c.printRow(out, raw)
}

func (c *client) printRow(out io.Writer, raw json.RawMessage) error {
	if c.output == "json" {
		return printJSON(out, raw)
	}
	return printFields(out, raw)
}

// post sends an action and prints the row it answers with.
func (c *client) post(ctx context.Context, out io.Writer, path string, body any) error {
	var raw json.RawMessage
	if err := c.do(ctx, "POST", path, nil, body, &raw); err != nil {
		return err
	}
	return c.printRow(out, raw)
}

// list fetches one page and prints it as a table built by row, or as JSON.
// When there are more pages, the table ends with the flag that shows the
// next one.
func list[T any](ctx context.Context, c *client, out io.Writer, path string, q url.Values, header []string, row func(*T) []string) error {
	var raw json.RawMessage
	if err := c.do(ctx, "GET", path, q, nil, &raw); err != nil {
		return err
	}
	if c.output == "json" {
		return printJSON(out, raw)
	}
	var page api.List[T]
	if err := json.Unmarshal(raw, &page); err != nil {
		return fmt.Errorf("decode list: %w", err)
	}
	// Rows the API shows as invalid (a JSON column plain SQL filled with
	// something else) are marked in their first cell and explained below.
	var marks api.List[api.Validity]
	if err := json.Unmarshal(raw, &marks); err != nil || len(marks.Items) != len(page.Items) {
		marks.Items = make([]api.Validity, len(page.Items))
	}
	rows := make([][]string, len(page.Items))
	var notes []string
	for i := range page.Items {
		rows[i] = row(&page.Items[i])
		if m := marks.Items[i]; m.Invalid && len(rows[i]) > 0 {
			notes = append(notes, fmt.Sprintf("invalid row %s: %s", rows[i][0], m.InvalidReason))
			rows[i][0] += " (invalid)"
		}
	}
	if err := table(out, header, rows); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(out, inertCell(n))
	}
	if page.NextCursor != "" {
		fmt.Fprintf(out, "(more: add --cursor %s)\n", inertCell(page.NextCursor))
	}
	return nil
}

// pageFlags adds --limit and --cursor to a list command.
type pageFlags struct {
	limit  int
	cursor string
}

func (p *pageFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&p.limit, "limit", api.DefaultLimit, fmt.Sprintf("rows per page (1-%d)", api.MaxLimit))
	cmd.Flags().StringVar(&p.cursor, "cursor", "", "show the page after this cursor (printed under the previous page)")
}

func (p *pageFlags) query() url.Values {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(p.limit))
	if p.cursor != "" {
		q.Set("cursor", p.cursor)
	}
	return q
}

// resolve turns an argument into an id: digits are an id, anything else a
// name looked up in the list at path (names may not be all digits).
func (c *client) resolve(ctx context.Context, path, what, arg string) (string, error) {
	if _, err := strconv.ParseInt(arg, 10, 64); err == nil {
		return arg, nil
	}
	var page api.List[struct {
		ID int64 `json:"id"`
	}]
	if err := c.do(ctx, "GET", path, url.Values{"name": {arg}}, nil, &page); err != nil {
		return "", err
	}
	if len(page.Items) == 0 {
		return "", fmt.Errorf("no %s named %q", what, arg)
	}
	return strconv.FormatInt(page.Items[0].ID, 10), nil
}

// jsonFlag parses a --params style flag as a JSON object.
func jsonFlag(name, v string) (json.RawMessage, error) {
	raw := json.RawMessage(strings.TrimSpace(v))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("--%s: want a JSON object such as '{\"key\": \"value\"}': %v", name, err)
	}
	return raw, nil
}

func newNodesCommand() *cobra.Command {
	cmd, f := adminGroup("nodes", "List the nodes of the cluster", "List every chime node sharing the database, with its last heartbeat.")
	cmd.RunE = runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
		return list(ctx, c, out, api.Prefix+"/nodes", nil,
			[]string{"ID", "HOSTNAME", "PID", "VERSION", "ROLES", "TAGS", "STATUS", "DRAIN", "STARTED", "HEARTBEAT"},
			func(n *nodeRow) []string {
				return []string{n.ID, str(n.Hostname), strconv.Itoa(n.PID), str(n.Version), str(n.Roles), dash(n.Tags), n.Status,
					dash(n.Drain), timeCell(&n.StartedAt), timeCell(&n.HeartbeatAt)}
			})
	})
	return cmd
}

// dash shows an empty cell as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return str(s)
}

// newNodeCommand drains and undrains nodes.
func newNodeCommand() *cobra.Command {
	cmd, f := adminGroup("node", "Drain or undrain a node",
		"A draining node stops claiming jobs and finishes what it runs (after its taskengine.drain_timeout, when set, "+
			"it hands the rest back to pending without using an attempt); `chime nodes` shows it draining, then drained. "+
			"undrain lets it claim again. The node acts within one cluster.heartbeat, whichever node serves the request. "+
			"docs/limits.md has the details.")
	state := func(action, short string) *cobra.Command {
		return &cobra.Command{
			Use: action + " ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
				var raw json.RawMessage
				if err := c.do(ctx, "POST", api.Prefix+"/nodes/"+url.PathEscape(args[0])+"/"+action, nil, nil, &raw); err != nil {
					return err
				}
				return c.printRow(out, raw)
			}),
		}
	}
	cmd.AddCommand(state("drain", "Stop a node claiming; it finishes what it runs"), state("undrain", "Let a drained node claim again"))
	return cmd
}
