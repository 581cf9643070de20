package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/store"
)

func testKeyring(t *testing.T) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.NewKeyring("test:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, secrets.KeySize)), nil)
	require.NoError(t, err)
	return kr
}

// TestSecretsAPI: a value with newlines and NULs is stored sealed and
// opens to the same bytes; lists and answers show names and dates only;
// bad names and values are refused with the field; a node without a key
// refuses and stores nothing; a rotation seals old rows with the new key.
func TestSecretsAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		var logs bytes.Buffer
		log := logrus.New()
		log.SetOutput(&logs)
		log.SetLevel(logrus.DebugLevel)
		oldKey := testKeyring(t)
		b := setupWith(t, st, func(c *Config) { c.Logger, c.Secrets = log, oldKey })
		const value = "pa55\nword\x00tail \"quoted\" <&>"
		body, err := json.Marshal(map[string]string{"name": "erp/password", "value": value})
		require.NoError(t, err)
		made := b.ok(201, "POST", "/api/v1/secrets", string(body))
		require.Equal(t, "erp/password", made["name"])
		require.NotContains(t, made, "value")
		b.ok(200, "POST", "/api/v1/secrets", string(body))
		bin := []byte{0, 1, 0xff, '\n'}
		b.ok(201, "POST", "/api/v1/secrets", `{"name":"bin","value_base64":"`+base64.StdEncoding.EncodeToString(bin)+`"}`)

		src := &secrets.Source{St: st.Admin(), Keys: oldKey}
		got, err := src.Secret(t.Context(), "erp/password")
		require.NoError(t, err)
		require.Equal(t, value, got)
		got, err = src.Secret(t.Context(), "bin")
		require.NoError(t, err)
		require.Equal(t, string(bin), got)

		rec := b.call("GET", "/api/v1/secrets", "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.NotContains(t, rec.Body.String(), "pa55")
		var list List[map[string]any]
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &list))
		require.Len(t, list.Items, 2)
		for _, it := range list.Items {
			require.ElementsMatch(t, []string{"name", "created_at", "updated_at"}, keys(it))
		}
		var row models.Secret
		require.NoError(t, st.DB().Where("name = ?", "erp/password").First(&row).Error)
		require.NotContains(t, row.Ciphertext+row.Nonce, "pa55")

		b.fails(400, "name", "may hold only", "POST", "/api/v1/secrets", `{"name":"a b","value":"x"}`)
		b.fails(400, "value", "one of the two", "POST", "/api/v1/secrets", `{"name":"a"}`)
		b.fails(400, "value", "one of the two", "POST", "/api/v1/secrets", `{"name":"a","value":"x","value_base64":"eA=="}`)
		b.fails(400, "value", "JSON string", "POST", "/api/v1/secrets", `{"name":"a","value":5}`)
		b.fails(400, "value", "at most", "POST", "/api/v1/secrets", `{"name":"a","value":"`+strings.Repeat("x", MaxSecretBytes+1)+`"}`)
		b.fails(404, "", "does not exist", "DELETE", "/api/v1/secrets/nope", "")

		// A node without a key refuses, and stores nothing.
		bare := setupWith(t, st, func(c *Config) { c.Secrets = nil })
		rec = bare.call("POST", "/api/v1/secrets", `{"name":"new","value":"x"}`)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), "CHIME_SECRETS_KEY")
		_, err = st.Admin().GetSecret(t.Context(), "new")
		require.Error(t, err)

		// Rotation: a new current key, the old one kept to open.
		newKey, err := secrets.NewKeyring("new:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, secrets.KeySize)),
			[]string{"test:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, secrets.KeySize))})
		require.NoError(t, err)
		rotated := setupWith(t, st, func(c *Config) { c.Secrets = newKey })
		res := rotated.ok(200, "POST", "/api/v1/secrets/rotate", "")
		require.Equal(t, map[string]any{"key_id": "new", "rotated": 2.0, "current": 0.0, "changed": 0.0}, res)
		res = rotated.ok(200, "POST", "/api/v1/secrets/rotate", "")
		require.Equal(t, 2.0, res["current"])
		newOnly, err := secrets.NewKeyring("new:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, secrets.KeySize)), nil)
		require.NoError(t, err)
		got, err = (&secrets.Source{St: st.Admin(), Keys: newOnly}).Secret(t.Context(), "erp/password")
		require.NoError(t, err, "after the rotation the old key is not needed")
		require.Equal(t, value, got)
		// The old key alone no longer opens them; a rotation by a node
		// lacking a row's key says which and stops.
		_, err = src.Secret(t.Context(), "erp/password")
		require.ErrorIs(t, err, secrets.ErrUnknownKey)
		rec = b.call("POST", "/api/v1/secrets/rotate", "")
		require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), "configure the key")

		b.ok(204, "DELETE", "/api/v1/secrets/erp%2Fpassword", "")
		_, err = st.Admin().GetSecret(t.Context(), "erp/password")
		require.Error(t, err)
		require.NotContains(t, logs.String(), "pa55")
		require.Contains(t, logs.String(), "secret set")
	})
}

// TestSecretReferencesNeedAdmin: params that refer to a secret, escaped
// or not, are refused to roles below admin; an admin's are accepted, and
// a malformed reference is a 400 naming params.
func TestSecretReferencesNeedAdmin(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	b := setup(t, st)
	require.NoError(t, st.Admin().CreateToken(t.Context(), &models.APIToken{Name: "ed", TokenSHA256: HashToken("chime_ed"), Role: models.RoleEditor}))
	for _, ref := range []string{`{"$secret":"pw"}`, `{"\u0024secret":"pw"}`} {
		body := `{"name":"d` + itoa(int64(len(ref))) + `","task_type":"sleep","default_params":{"duration":"1ms","x":` + ref + `}}`
		rec := b.as("chime_ed", "POST", "/api/v1/definitions", body)
		require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), "refer to secrets")
	}
	b.ok(201, "POST", "/api/v1/definitions", `{"name":"sh","task_type":"shell","default_params":{"command":"true","env":{"PW":{"$secret":"pw"}}}}`)
	b.fails(400, "default_params", "secret reference", "POST", "/api/v1/definitions",
		`{"name":"bad","task_type":"shell","default_params":{"command":"true","env":{"PW":{"$secret":"pw","x":1}}}}`)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
