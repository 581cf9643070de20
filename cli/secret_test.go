package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/secrets"
)

// TestSecretCommands: set reads the value byte for byte from stdin or a
// file (newlines, NULs, bytes that are not UTF-8); list shows names only;
// delete removes; rotate reports; nothing prints a value.
func TestSecretCommands(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	withStdin := func(in string, args ...string) (string, error) {
		cmd := NewRootCommand()
		var buf bytes.Buffer
		cmd.SetIn(bytes.NewBufferString(in))
		cmd.SetOut(&buf)
		cmd.SetErr(&buf)
		cmd.SetArgs(append(args, "--api-url", url, "--token", cliToken))
		err := cmd.ExecuteContext(context.Background())
		return buf.String(), err
	}
	const value = "pw-line1\npw-line2\x00end\n"
	out, err := withStdin(value, "secret", "set", "erp/password")
	require.NoError(t, err, out)
	require.Contains(t, out, `{"$secret": "erp/password"}`)
	require.NotContains(t, out, "pw-line")
	file := filepath.Join(t.TempDir(), "v")
	require.NoError(t, os.WriteFile(file, []byte{0xff, 0xfe, 'x'}, 0o600))
	out, err = withStdin("", "secret", "set", "bin", "--from-file", file)
	require.NoError(t, err, out)
	out, err = withStdin("", "secret", "set", "empty")
	require.ErrorContains(t, err, "no value on stdin", out)

	row, err := st.Admin().GetSecret(t.Context(), "erp/password")
	require.NoError(t, err)
	require.NotContains(t, row.Ciphertext, "pw-line")
	keys, err := secrets.NewKeyring(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, secrets.KeySize)), nil)
	require.NoError(t, err)
	src := &secrets.Source{St: st.Admin(), Keys: keys}
	got, err := src.Secret(t.Context(), "erp/password")
	require.NoError(t, err)
	require.Equal(t, value, got, "byte for byte, the last newline too")
	got, err = src.Secret(t.Context(), "bin")
	require.NoError(t, err)
	require.Equal(t, "\xff\xfex", got)

	out = mustChime(t, url, "secret", "list")
	require.Regexp(t, `(?m)^NAME\s+CREATED\s+UPDATED`, out)
	require.Regexp(t, `(?m)^erp/password\s+\S+\s+\S+$`, out)
	require.NotContains(t, out, "pw-line")
	out = mustChime(t, url, "secret", "rotate")
	require.Contains(t, out, "rotated 0 secrets")
	require.Contains(t, out, "2 were already under it")
	out = mustChime(t, url, "secret", "delete", "erp/password")
	require.Contains(t, out, "deleted secret erp/password")
	_, err = chime(t, url, "secret", "delete", "erp/password")
	require.ErrorContains(t, err, "does not exist")
}
