package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
)

const auditPath = api.Prefix + "/audit"

// newAuditCommand reads the audit log (admin only).
func newAuditCommand() *cobra.Command {
	cmd, f := adminGroup("audit", "Read the audit log of changes (admin only)",
		"Every change of a definition, schedule, calendar, queue, workflow, alert channel or rule, API token or "+
			"setting is kept, with who made it and through which door: api, console, cli, sql (plain SQL, by the "+
			"database user) or engine (chime itself). Before and after are shown by --output json, secrets masked. "+
			"See docs/security.md.")
	var object, actor, since, until string
	var page pageFlags
	listCmd := &cobra.Command{
		Use:   "list [--object TYPE[:ID]] [--actor NAME] [--since TIME|DURATION] [--until TIME|DURATION]",
		Short: "List changes, newest first",
		Example: `  chime audit list --object schedule:42
  chime audit list --actor oncall --since 24h
  chime audit list --object definition --output json`,
		Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			q := page.query()
			if object != "" {
				typ, id, _ := strings.Cut(object, ":")
				q.Set("object_type", typ)
				if id != "" {
					q.Set("object_id", id)
				}
			}
			if actor != "" {
				q.Set("actor", actor)
			}
			now := time.Now()
			for _, b := range []struct{ name, v string }{{"since", since}, {"until", until}} {
				if b.v == "" {
					continue
				}
				at, err := auditTime(b.name, b.v, now)
				if err != nil {
					return err
				}
				q.Set(b.name, at.UTC().Format(time.RFC3339Nano))
			}
			return list(ctx, c, out, auditPath, q, []string{"ID", "AT", "ACTOR", "DOOR", "ACTION", "OBJECT", "NAME"},
				func(e *api.AuditEntryView) []string {
					return []string{fmt.Sprint(e.ID), e.At.UTC().Format(time.RFC3339), e.Actor, e.Door, e.Action,
						e.ObjectType + ":" + e.ObjectID, e.ObjectName}
				})
		}),
	}
	fl := listCmd.Flags()
	fl.StringVar(&object, "object", "", "only changes of this kind of object (definition, schedule, calendar, queue, workflow, "+
		"workflow_step, workflow_edge, alert_channel, alert_rule, api_token, configuration), or of one: TYPE:ID")
	fl.StringVar(&actor, "actor", "", "only changes by this token name, bootstrap, chime, or database user")
	fl.StringVar(&since, "since", "", "only changes at or after this RFC 3339 time, or this long ago (24h)")
	fl.StringVar(&until, "until", "", "only changes before this RFC 3339 time, or this long ago")
	page.register(listCmd)
	cmd.AddCommand(listCmd)
	return cmd
}

// auditTime reads --since or --until: an RFC 3339 time, or a duration
// before now.
func auditTime(flag, v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--%s %q: a duration counts back from now and must not be negative", flag, v)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: give an RFC 3339 time such as 2030-01-02T15:04:05Z or a duration such as 24h", flag, v)
	}
	return t, nil
}
