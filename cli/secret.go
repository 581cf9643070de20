package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
)

const secretsPath = api.Prefix + "/secrets"

// newSecretCommand manages the secrets jobs refer to (admin only). A value
// goes in from stdin or a file, never from the command line, where ps and
// the shell's history would keep it; nothing reads one back.
func newSecretCommand() *cobra.Command {
	cmd, f := adminGroup("secret", "Manage secrets that job params refer to (admin only)",
		`Secrets are values jobs need and nobody should read back: passwords, API keys. A job's params refer to one as
{"$secret": "NAME"} (a shell job's env values, an httpcall's headers, any JSON value); a worker reads the value
when the job runs, and masks it in what the job logs. Values are encrypted with AES-256-GCM under the key the nodes
are given by CHIME_SECRETS_KEY or secrets.key_file. See docs/security.md.`)
	cmd.Aliases = []string{"secrets"}

	var fromFile string
	var trim bool
	setCmd := &cobra.Command{
		Use:   "set NAME [--from-file FILE]",
		Short: "Create or replace a secret; the value is read from stdin or --from-file, byte for byte",
		Example: `  printf %s "$ERP_PASSWORD" | chime secret set erp/password
  chime secret set tls/key --from-file key.pem`,
		Args: cobra.ExactArgs(1),
	}
	setCmd.RunE = func(c *cobra.Command, args []string) error {
		value, err := readSecretValue(c.InOrStdin(), fromFile, trim)
		if err != nil {
			return err
		}
		return runner(f, func(ctx context.Context, cl *client, out io.Writer, args []string) error {
			body := map[string]any{"name": args[0]}
			if utf8.Valid(value) {
				body["value"] = string(value)
			} else {
				body["value_base64"] = base64.StdEncoding.EncodeToString(value)
			}
			var v api.SecretView
			if err := cl.do(ctx, "POST", secretsPath, nil, body, &v); err != nil {
				return err
			}
			fmt.Fprintf(out, "secret %s set (%d bytes); refer to it as {\"$secret\": %q}\n", inertCell(v.Name), len(value), v.Name)
			return nil
		})(c, args)
	}
	setCmd.Flags().StringVar(&fromFile, "from-file", "", "read the value from this file instead of stdin")
	setCmd.Flags().BoolVar(&trim, "trim-newline", false, "drop one trailing newline (what echo adds)")

	listCmd := &cobra.Command{
		Use: "list", Short: "List secrets: names and dates, never values", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, secretsPath, nil, []string{"NAME", "CREATED", "UPDATED"},
				func(s *api.SecretView) []string {
					return []string{s.Name, s.CreatedAt.UTC().Format(time.RFC3339), s.UpdatedAt.UTC().Format(time.RFC3339)}
				})
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete NAME", Short: "Delete a secret; jobs that refer to it then fail", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			if err := c.do(ctx, "DELETE", secretsPath+"/"+url.PathEscape(args[0]), nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted secret %s\n", inertCell(args[0]))
			return nil
		}),
	}
	rotateCmd := &cobra.Command{
		Use:   "rotate",
		Short: "Re-encrypt every secret with the current key",
		Long: `Re-encrypts every secret sealed with an old key with the node's current key. First give every node the
new key as current and the old one as old (CHIME_SECRETS_KEY=new, CHIME_SECRETS_OLD_KEYS=old) and restart them;
then rotate; then drop the old key. See docs/security.md.`,
		Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			var raw json.RawMessage
			if err := c.do(ctx, "POST", secretsPath+"/rotate", nil, nil, &raw); err != nil {
				return err
			}
			if c.output == "json" {
				return printJSON(out, raw)
			}
			var r api.RotateResult
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("decode rotation: %w", err)
			}
			fmt.Fprintf(out, "rotated %d secrets to key %s; %d were already under it; %d were set meanwhile\n", r.Rotated, r.KeyID, r.Current, r.Changed)
			return nil
		}),
	}
	cmd.AddCommand(setCmd, listCmd, deleteCmd, rotateCmd)
	return cmd
}

// readSecretValue reads a value byte for byte (newlines and NULs kept),
// up to api.MaxSecretBytes.
func readSecretValue(stdin io.Reader, file string, trim bool) ([]byte, error) {
	src := stdin
	what := "stdin"
	if file != "" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		defer fh.Close()
		src, what = fh, file
	}
	v, err := io.ReadAll(io.LimitReader(src, api.MaxSecretBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the value from %s: %w", what, err)
	}
	if len(v) > api.MaxSecretBytes {
		return nil, fmt.Errorf("the value from %s is longer than %d bytes", what, api.MaxSecretBytes)
	}
	if trim {
		v = bytes.TrimSuffix(v, []byte("\n"))
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("no value on %s: pipe it in (printf %%s \"$VALUE\" | chime secret set NAME) or give --from-file", what)
	}
	return v, nil
}
