package chimedbtest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// secretMethods are the secrets of AdminQueries. The suite stores opaque
// text: sealing is package secrets' business, not the database's.
func secretMethods() []method {
	return []method{
		{"AdminQueries.PutSecret", putSecretCases},
		{"AdminQueries.GetSecret", getSecretCases},
		{"AdminQueries.ListSecrets", listSecretCases},
		{"AdminQueries.DeleteSecret", deleteSecretCases},
		{"AdminQueries.RecryptSecret", recryptSecretCases},
	}
}

func (e *env) secret(name, ct, nonce string) (*models.Secret, bool) {
	e.t.Helper()
	s := &models.Secret{Name: name, Ciphertext: ct, Nonce: nonce, KeyID: "k1"}
	created, err := e.admin.PutSecret(e.ctx, s)
	require.NoError(e.t, err)
	return s, created
}

var putSecretCases = []tcase{
	{"inserts, then replaces the ciphertext of the same name and keeps created_at", func(e *env) {
		s, created := e.secret("erp/password", "c1", "n1")
		require.True(e.t, created)
		require.Positive(e.t, s.ID)
		require.False(e.t, s.CreatedAt.IsZero())
		again := &models.Secret{Name: "erp/password", Ciphertext: "c2", Nonce: "n2", KeyID: "k2"}
		created, err := e.admin.PutSecret(e.ctx, again)
		require.NoError(e.t, err)
		require.False(e.t, created)
		require.Equal(e.t, s.ID, again.ID)
		got, err := e.admin.GetSecret(e.ctx, "erp/password")
		require.NoError(e.t, err)
		require.Equal(e.t, []string{"c2", "n2", "k2"}, []string{got.Ciphertext, got.Nonce, got.KeyID})
		require.True(e.t, got.CreatedAt.Equal(s.CreatedAt), "created_at stays")
		require.False(e.t, got.UpdatedAt.Before(s.UpdatedAt))
	}},
	{"racing sets of one new name all succeed, one of them creating the row", func(e *env) {
		const n = 8
		created := make(chan bool, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c, err := e.admin.PutSecret(e.ctx, &models.Secret{Name: "raced", Ciphertext: fmt.Sprint("c", i), Nonce: fmt.Sprint("n", i), KeyID: "k"})
				created <- c
				errs <- err
			})
		}
		wg.Wait()
		close(created)
		close(errs)
		for err := range errs {
			require.NoError(e.t, err)
		}
		count := 0
		for c := range created {
			if c {
				count++
			}
		}
		require.Equal(e.t, 1, count)
	}},
	{"a long ciphertext (a 64 KiB value, sealed and in base64) is kept whole", func(e *env) {
		long := strings.Repeat("QUJD", 22000)
		e.secret("big", long, "n")
		got, err := e.admin.GetSecret(e.ctx, "big")
		require.NoError(e.t, err)
		require.Equal(e.t, long, got.Ciphertext)
	}},
}

var getSecretCases = []tcase{
	{"finds the exact name only, case too; another is ErrNotFound", func(e *env) {
		e.secret("Erp", "c", "n")
		_, err := e.admin.GetSecret(e.ctx, "erp")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		got, err := e.admin.GetSecret(e.ctx, "Erp")
		require.NoError(e.t, err)
		require.Equal(e.t, "c", got.Ciphertext)
	}},
}

var listSecretCases = []tcase{
	{"lists every secret by name", func(e *env) {
		got, err := e.admin.ListSecrets(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		e.secret("b", "c", "n")
		e.secret("a", "c", "n")
		got, err = e.admin.ListSecrets(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		require.Equal(e.t, "a", got[0].Name)
		require.Equal(e.t, "b", got[1].Name)
	}},
}

var deleteSecretCases = []tcase{
	{"deletes the row; an unknown name is ErrNotFound", func(e *env) {
		e.secret("gone", "c", "n")
		require.NoError(e.t, e.admin.DeleteSecret(e.ctx, "gone"))
		_, err := e.admin.GetSecret(e.ctx, "gone")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		require.ErrorIs(e.t, e.admin.DeleteSecret(e.ctx, "gone"), chimedb.ErrNotFound)
	}},
}

var recryptSecretCases = []tcase{
	{"replaces the ciphertext while the nonce is the one read; a set meanwhile wins", func(e *env) {
		e.secret("r", "c1", "n1")
		ok, err := e.admin.RecryptSecret(e.ctx, &models.Secret{Name: "r", Ciphertext: "c2", Nonce: "n2", KeyID: "k2"}, "n1")
		require.NoError(e.t, err)
		require.True(e.t, ok)
		ok, err = e.admin.RecryptSecret(e.ctx, &models.Secret{Name: "r", Ciphertext: "c3", Nonce: "n3", KeyID: "k3"}, "n1")
		require.NoError(e.t, err)
		require.False(e.t, ok, "the nonce is no longer n1")
		got, err := e.admin.GetSecret(e.ctx, "r")
		require.NoError(e.t, err)
		require.Equal(e.t, []string{"c2", "n2", "k2"}, []string{got.Ciphertext, got.Nonce, got.KeyID})
		ok, err = e.admin.RecryptSecret(e.ctx, &models.Secret{Name: "none", Ciphertext: "c", Nonce: "n", KeyID: "k"}, "n")
		require.NoError(e.t, err)
		require.False(e.t, ok)
	}},
}
