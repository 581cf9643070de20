package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// ErrMissing is the error of a reference to a secret that does not exist.
var ErrMissing = errors.New("secret does not exist")

// Reader is the part of chimedb.AdminQueries a Source reads.
type Reader interface {
	GetSecret(ctx context.Context, name string) (*models.Secret, error)
}

// Source opens secrets by name: what a worker resolves references with.
type Source struct {
	St   Reader
	Keys *Keyring
}

// Secret returns the value of the secret named name. A secret that does
// not exist wraps ErrMissing; a node without a key, ErrNoKey.
func (s *Source) Secret(ctx context.Context, name string) (string, error) {
	if !s.Keys.Configured() {
		return "", ErrNoKey
	}
	row, err := s.St.GetSecret(ctx, name)
	if errors.Is(err, chimedb.ErrNotFound) {
		return "", fmt.Errorf("%w: %q (set it with chime secret set %s)", ErrMissing, name, name)
	}
	if err != nil {
		return "", err
	}
	v, err := s.Keys.Open(name, Sealed{Ciphertext: row.Ciphertext, Nonce: row.Nonce, KeyID: row.KeyID})
	if err != nil {
		return "", fmt.Errorf("secret %q: %w", name, err)
	}
	return string(v), nil
}

// RotateStore is the part of chimedb.AdminQueries Rotate needs.
type RotateStore interface {
	ListSecrets(ctx context.Context) ([]models.Secret, error)
	RecryptSecret(ctx context.Context, s *models.Secret, oldNonce string) (bool, error)
}

// RotateResult counts what Rotate did.
type RotateResult struct {
	// Rotated rows were sealed again with the current key; Current ones
	// were already; Changed ones were set by someone else meanwhile (with
	// the current key, then).
	Rotated, Current, Changed int
	KeyID                     string
}

// Rotate seals every row not sealed with the current key again with it.
// A row it cannot open (a key this node lacks) stops it with an error
// naming the row; the rows done before stay done, and a second run goes
// on from there.
func Rotate(ctx context.Context, st RotateStore, kr *Keyring) (RotateResult, error) {
	res := RotateResult{KeyID: kr.CurrentID()}
	if !kr.Configured() {
		return res, ErrNoKey
	}
	rows, err := st.ListSecrets(ctx)
	if err != nil {
		return res, err
	}
	for i := range rows {
		row := &rows[i]
		if row.KeyID == kr.CurrentID() {
			res.Current++
			continue
		}
		v, err := kr.Open(row.Name, Sealed{Ciphertext: row.Ciphertext, Nonce: row.Nonce, KeyID: row.KeyID})
		if err != nil {
			return res, fmt.Errorf("secret %q: %w", row.Name, err)
		}
		s, err := kr.Seal(row.Name, v)
		clear(v)
		if err != nil {
			return res, err
		}
		ok, err := st.RecryptSecret(ctx, &models.Secret{Name: row.Name, Ciphertext: s.Ciphertext, Nonce: s.Nonce, KeyID: s.KeyID}, row.Nonce)
		switch {
		case err != nil:
			return res, err
		case ok:
			res.Rotated++
		default:
			res.Changed++
		}
	}
	return res, nil
}
