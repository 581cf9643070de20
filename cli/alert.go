package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/models"
)

const (
	alertChannelsPath = api.Prefix + "/alert-channels"
	alertRulesPath    = api.Prefix + "/alert-rules"
	alertsPath        = api.Prefix + "/alerts"
)

// newAlertCommand is `chime alert`: channels, rules, the alerts sent, and
// a test message (docs/alerts.md).
func newAlertCommand() *cobra.Command {
	cmd, f := adminGroup("alert", "Manage alerts: channels, rules, and what was sent",
		"Alerts tell people when jobs fail, recover or are canceled, when a schedule misses its deadline, when runs are slow, "+
			"when due jobs pile up and when a node is lost. A rule picks an event and sends it to a channel (email, a signed "+
			"webhook, a Slack-compatible incoming webhook). docs/alerts.md has the events, the payload and the signature.")
	cmd.Aliases = []string{"alerts"}
	cmd.AddCommand(newAlertChannelCommand(f), newAlertRuleCommand(f))

	testCmd := &cobra.Command{
		Use: "test CHANNEL", Short: "Send a test message through a channel now", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolveAlert(ctx, alertChannelsPath, "alert channel", args[0])
			if err != nil {
				return err
			}
			var res api.AlertTestResult
			if err := c.do(ctx, "POST", alertChannelsPath+"/"+id+"/test", nil, nil, &res); err != nil {
				return err
			}
			if !res.Sent {
				return fmt.Errorf("the test message was not delivered: %s", inertCell(res.Error))
			}
			fmt.Fprintf(out, "test message sent through %s\n", inertCell(args[0]))
			return nil
		}),
	}
	var pf pageFlags
	var status string
	listCmd := &cobra.Command{
		Use: "list", Short: "List the alerts recorded, newest first, with their delivery state", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			q := pf.query()
			if status != "" {
				q.Set("status", status)
			}
			return list(ctx, c, out, alertsPath, q, []string{"ID", "CREATED", "EVENT", "STATE", "STATUS", "TRIES", "SUMMARY", "LAST ERROR"},
				func(a *models.Alert) []string {
					e := ""
					if a.LastError != nil {
						e = *a.LastError
					}
					return []string{itoa(a.ID), timeCell(&a.CreatedAt), string(a.Event), string(a.State), string(a.Status),
						fmt.Sprint(a.Attempts), str(a.Summary), str(e)}
				})
		}),
	}
	pf.register(listCmd)
	listCmd.Flags().StringVar(&status, "status", "", "only pending, sent, failed or suppressed alerts")
	cmd.AddCommand(testCmd, listCmd)
	return cmd
}

// secretFlag reads a flag that may hold a secret: "@FILE" reads it from a
// file, so it need not appear in the shell's history or in ps.
func secretFlag(name, v string) (string, error) {
	if p, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return v, nil
}

func newAlertChannelCommand(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "channel", Aliases: []string{"channels"}, Short: "Manage alert channels (where alerts go)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}

	var kind, rawURL, recipients, key string
	var headers []string
	var timeout time.Duration
	var disabled bool
	body := func(cmd *cobra.Command, name string) (map[string]any, error) {
		b := map[string]any{}
		if name != "" {
			b["name"] = name
		}
		fl := cmd.Flags()
		if fl.Changed("kind") {
			b["kind"] = kind
		}
		if fl.Changed("url") {
			u, err := secretFlag("url", rawURL)
			if err != nil {
				return nil, err
			}
			b["url"] = u
		}
		if fl.Changed("recipients") {
			b["recipients"] = recipients
		}
		if fl.Changed("signing-key") {
			k, err := secretFlag("signing-key", key)
			if err != nil {
				return nil, err
			}
			b["signing_key"] = k
		}
		if fl.Changed("header") {
			h := map[string]string{}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("--header %q: want NAME=VALUE", kv)
				}
				v, err := secretFlag("header", v)
				if err != nil {
					return nil, err
				}
				h[k] = v
			}
			b["headers"] = h
		}
		if fl.Changed("timeout") {
			b["timeout_seconds"] = int(timeout.Round(time.Second) / time.Second)
		}
		if fl.Changed("disabled") {
			b["enabled"] = !disabled
		}
		return b, nil
	}
	flags := func(c *cobra.Command) {
		fl := c.Flags()
		fl.StringVar(&kind, "kind", "", "email, webhook or slack")
		fl.StringVar(&rawURL, "url", "", "the webhook URL, http or https (@FILE reads it from a file); never shown back")
		fl.StringVar(&recipients, "recipients", "", "comma-separated addresses (email)")
		fl.StringVar(&key, "signing-key", "", "key of the HMAC-SHA256 signature (webhook; @FILE reads it from a file); never shown back")
		fl.StringArrayVar(&headers, "header", nil, "an extra request header NAME=VALUE (repeatable; VALUE @FILE reads a file); values never shown back")
		fl.DurationVar(&timeout, "timeout", 10*time.Second, "per request, 1s to 60s")
		fl.BoolVar(&disabled, "disabled", false, "keep the channel but send nothing through it")
	}
	var addCmd, setCmd *cobra.Command
	addCmd = &cobra.Command{
		Use:   "add NAME --kind KIND ...",
		Short: "Create a channel",
		Example: `  chime alert channel add ops-hook --kind webhook --url https://ops.example.com/chime --signing-key @/etc/chime/hook.key
  chime alert channel add chat --kind slack --url @/etc/chime/slack.url
  chime alert channel add oncall --kind email --recipients oncall@example.com`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			b, err := body(addCmd, args[0])
			if err != nil {
				return err
			}
			return c.post(ctx, out, alertChannelsPath, b)
		}),
	}
	flags(addCmd)
	_ = addCmd.MarkFlagRequired("kind")
	setCmd = &cobra.Command{
		Use: "set NAME [flags]", Short: "Change a channel: only the flags given", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolveAlert(ctx, alertChannelsPath, "alert channel", args[0])
			if err != nil {
				return err
			}
			b, err := body(setCmd, "")
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.do(ctx, "PATCH", alertChannelsPath+"/"+id, nil, b, &raw); err != nil {
				return err
			}
			return c.printRow(out, raw)
		}),
	}
	flags(setCmd)
	listCmd := &cobra.Command{
		Use: "list", Short: "List channels (secrets show only as set or not)", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, alertChannelsPath, nil, []string{"ID", "NAME", "KIND", "TARGET", "SIGNED", "ENABLED", "INVALID"},
				func(ch *api.AlertChannelView) []string {
					target := ch.URL
					if ch.Kind == models.ChannelEmail {
						target = ch.Recipients
					}
					return []string{itoa(ch.ID), ch.Name, string(ch.Kind), str(target), fmt.Sprint(ch.SigningKeySet), fmt.Sprint(ch.Enabled), str(ch.Invalid)}
				})
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete NAME", Short: "Delete a channel no rule sends to", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolveAlert(ctx, alertChannelsPath, "alert channel", args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", alertChannelsPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted alert channel %s\n", id)
			return nil
		}),
	}
	cmd.AddCommand(addCmd, setCmd, listCmd, deleteCmd)
	return cmd
}

func newAlertRuleCommand(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "rule", Aliases: []string{"rules"}, Short: "Manage alert rules (which event goes where)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	var event, channel, definition, schedule, queue, workflow, params string
	var throttle time.Duration
	var disabled bool
	events := make([]string, len(models.AlertEvents))
	for i, e := range models.AlertEvents {
		events[i] = string(e)
	}
	addCmd := &cobra.Command{
		Use:   "add NAME --event EVENT --channel CHANNEL [--definition D | --schedule S | --queue Q | --workflow W] [--params JSON] [--throttle DURATION]",
		Short: "Create a rule",
		Example: `  chime alert rule add failures --event job_failed --channel ops-hook --throttle 10m
  chime alert rule add report-by-7 --event deadline --schedule nightly-report --channel chat --params '{"by": "07:00", "time_zone": "Europe/Berlin"}'
  chime alert rule add etl-slow --event slow --definition etl --channel ops-hook --params '{"median_factor": 3}'
  chime alert rule add backlog --event backlog --channel oncall --params '{"wait_seconds": 300}'
  chime alert rule add etl-queue --event job_failed --queue etl --channel chat
  chime alert rule add flapping --event lease_flapping --channel oncall --params '{"max_changes": 3, "within_seconds": 3600}'`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			b := map[string]any{"name": args[0], "event": event, "channel": channel, "throttle_seconds": int(throttle / time.Second),
				"enabled": !disabled}
			given := 0
			for _, v := range []string{definition, schedule, queue, workflow} {
				if v != "" {
					given++
				}
			}
			switch {
			case given > 1:
				return fmt.Errorf("--definition, --schedule, --queue and --workflow: give one or none")
			case queue != "":
				b["scope"], b["queue"] = "queue", queue
			case workflow != "":
				id, err := c.resolve(ctx, workflowsPath, "workflow", workflow)
				if err != nil {
					return err
				}
				b["scope"], b["workflow_id"] = "workflow", json.Number(id)
			case definition != "":
				id, err := c.resolve(ctx, definitionsPath, "definition", definition)
				if err != nil {
					return err
				}
				b["scope"], b["definition_id"] = "definition", json.Number(id)
			case schedule != "":
				id, err := c.resolve(ctx, schedulesPath, "schedule", schedule)
				if err != nil {
					return err
				}
				b["scope"], b["schedule_id"] = "schedule", json.Number(id)
			}
			if params != "" {
				p, err := jsonFlag("params", params)
				if err != nil {
					return err
				}
				b["params"] = p
			}
			return c.post(ctx, out, alertRulesPath, b)
		}),
	}
	fl := addCmd.Flags()
	fl.StringVar(&event, "event", "", strings.Join(events, ", "))
	fl.StringVar(&channel, "channel", "", "the channel's name")
	fl.StringVar(&definition, "definition", "", "only jobs of this definition (id or name)")
	fl.StringVar(&schedule, "schedule", "", "only jobs of this schedule (id or name); required by deadline")
	fl.StringVar(&queue, "queue", "", "only jobs that run in this queue")
	fl.StringVar(&workflow, "workflow", "", "only jobs of this workflow's runs (id or name)")
	fl.StringVar(&params, "params", "", "the event's thresholds, a JSON object (docs/alerts.md)")
	fl.DurationVar(&throttle, "throttle", 0, "at most one alert per subject in this window; the rest are counted (0: none)")
	fl.BoolVar(&disabled, "disabled", false, "keep the rule but do not evaluate it")
	_ = addCmd.MarkFlagRequired("event")
	_ = addCmd.MarkFlagRequired("channel")
	listCmd := &cobra.Command{
		Use: "list", Short: "List rules; an invalid one says why", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, alertRulesPath, nil, []string{"ID", "NAME", "EVENT", "SCOPE", "CHANNEL", "THROTTLE", "PARAMS", "ENABLED", "INVALID"},
				func(r *models.AlertRule) []string {
					scope := string(r.Scope)
					if r.DefinitionID != nil {
						scope += fmt.Sprintf(" %d", *r.DefinitionID)
					}
					if r.ScheduleID != nil {
						scope += fmt.Sprintf(" %d", *r.ScheduleID)
					}
					if r.Queue != nil {
						scope += " " + *r.Queue
					}
					if r.WorkflowID != nil {
						scope += fmt.Sprintf(" %d", *r.WorkflowID)
					}
					return []string{itoa(r.ID), r.Name, string(r.Event), scope, itoa(r.ChannelID),
						(time.Duration(r.ThrottleSeconds) * time.Second).String(), str(string(r.Params)), fmt.Sprint(r.Enabled), str(r.Invalid)}
				})
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete NAME", Short: "Delete a rule (its alerts stay)", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolveAlert(ctx, alertRulesPath, "alert rule", args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", alertRulesPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted alert rule %s\n", id)
			return nil
		}),
	}
	cmd.AddCommand(addCmd, listCmd, deleteCmd)
	return cmd
}

// resolveAlert is resolve for the alert lists, which are short and have
// no name filter: the name is matched here.
func (c *client) resolveAlert(ctx context.Context, path, what, arg string) (string, error) {
	var page api.List[struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}]
	if err := c.do(ctx, "GET", path, url.Values{}, nil, &page); err != nil {
		return "", err
	}
	for _, it := range page.Items {
		if it.Name == arg || itoa(it.ID) == arg {
			return itoa(it.ID), nil
		}
	}
	return "", fmt.Errorf("no %s named %q", what, arg)
}
