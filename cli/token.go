package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
)

const tokensPath = api.Prefix + "/tokens"

// newTokenCommand manages the named API tokens (admin only) and says who
// the CLI's own token is.
func newTokenCommand() *cobra.Command {
	cmd, f := adminGroup("token", "Manage named API tokens (roles and scopes)",
		"Named tokens let a team use chime with less than admin's power: a role (viewer, operator, editor, admin) and, "+
			"optionally, a scope (a prefix of job definition names). Only the token's SHA-256 is stored: the token is "+
			"printed once, by create. The CHIME_API_TOKEN of the configuration stays the bootstrap admin. See docs/security.md.")
	cmd.Aliases = []string{"tokens"}

	var role, scope, expires string
	createCmd := &cobra.Command{
		Use:   "create --name NAME --role ROLE [--scope PREFIX] [--expires DURATION|TIME]",
		Short: "Create a token and print it, this once",
		Example: `  chime token create --name oncall --role operator --expires 720h
  chime token create --name finance-ci --role editor --scope finance.`,
		Args: cobra.NoArgs,
	}
	var name string
	createCmd.RunE = runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
		body := map[string]any{"name": name, "role": role}
		if scope != "" {
			body["scope"] = scope
		}
		if expires != "" {
			at, err := expiryOf(expires, time.Now())
			if err != nil {
				return err
			}
			body["expires_at"] = at
		}
		var raw json.RawMessage
		if err := c.do(ctx, "POST", tokensPath, nil, body, &raw); err != nil {
			return err
		}
		if c.output == "json" {
			return printJSON(out, raw)
		}
		var t api.NewToken
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("decode token: %w", err)
		}
		exp := "never"
		if t.ExpiresAt != nil {
			exp = t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(out, "token %s (role %s, scope %q, expires %s):\n%s\n", inertCell(t.Name), t.Role, inertCell(t.Scope), exp, t.Token)
		fmt.Fprintln(out, "Store it now: chime keeps only its SHA-256 and cannot show it again.")
		return nil
	})
	fl := createCmd.Flags()
	fl.StringVar(&name, "name", "", "unique name, shown in logs and the audit of what the token does")
	fl.StringVar(&role, "role", "", "viewer, operator, editor or admin")
	fl.StringVar(&scope, "scope", "", "prefix of the job definition names the token reaches (not for admin)")
	fl.StringVar(&expires, "expires", "", "a duration from now (720h) or an RFC 3339 time; default never")
	_ = createCmd.MarkFlagRequired("name")
	_ = createCmd.MarkFlagRequired("role")

	listCmd := &cobra.Command{
		Use: "list", Short: "List tokens (never the tokens themselves)", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, tokensPath, nil, []string{"NAME", "ROLE", "SCOPE", "EXPIRES", "STATE"},
				func(t *api.TokenView) []string {
					exp, state := "never", "live"
					if t.ExpiresAt != nil {
						exp = t.ExpiresAt.UTC().Format(time.RFC3339)
					}
					switch {
					case t.RevokedAt != nil:
						state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
					case !t.Live:
						state = "refused (expired or unknown role)"
					}
					return []string{t.Name, string(t.Role), t.Scope, exp, state}
				})
		}),
	}
	revokeCmd := &cobra.Command{
		Use: "revoke NAME", Short: "Revoke a token on every node, its console sessions too", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			if err := c.do(ctx, "POST", tokensPath+"/"+url.PathEscape(args[0])+"/revoke", nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "revoked token %s\n", inertCell(args[0]))
			return nil
		}),
	}
	whoamiCmd := &cobra.Command{
		Use: "whoami", Short: "Show the name, role and scope of the token this CLI uses", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return c.show(ctx, out, api.Prefix+"/whoami")
		}),
	}
	cmd.AddCommand(createCmd, listCmd, revokeCmd, whoamiCmd)
	return cmd
}

// expiryOf reads --expires: a Go duration from now, or an RFC 3339 time.
func expiryOf(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--expires %q: a duration must be positive", v)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--expires %q: give a duration such as 720h or an RFC 3339 time such as 2030-01-02T15:04:05Z", v)
	}
	return t, nil
}
