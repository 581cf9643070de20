// Package secrets keeps the values of the secrets table encrypted and
// resolves the references params make to them.
//
// A value is sealed with AES-256-GCM (the standard library's crypto/aes and
// crypto/cipher) under the keyring's current key, with a fresh random
// nonce, and with the secret's name as associated data: a ciphertext copied
// to another name's row does not open. The key is given to chime by the
// environment (CHIME_SECRETS_KEY) or a file (secrets.key_file), never by
// the database. Old keys stay in the keyring to open what they sealed until
// a rotation (Rotate) seals every row with the current key again.
//
// References are JSON objects {"$secret": "NAME"} in any value position of
// a job's params; the task engine replaces them with the values on the
// worker, just before Execute, and masks the values in what the task logs.
//
// secrets imports chimedb (the rows it reads) and models.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrNoKey is the error of every seal and open on a node without a key.
var ErrNoKey = errors.New("secrets: no encryption key is configured on this node: set CHIME_SECRETS_KEY " +
	"(base64 of 32 random bytes, e.g. `openssl rand -base64 32`) or secrets.key_file; chime never stores a secret in clear")

// ErrUnknownKey is the error of opening a row sealed by a key this node
// does not have (rotated away, or not configured here).
var ErrUnknownKey = errors.New("secrets: the row was encrypted with a key this node does not have")

// ErrUndecryptable is the error of a row that does not open with its key:
// changed by hand, or copied from another secret's row.
var ErrUndecryptable = errors.New("secrets: the row does not decrypt")

// IsPermanent says whether err is one no retry mends: a missing secret,
// no key, a key this node lacks, a row that does not decrypt, or a
// malformed reference.
func IsPermanent(err error) bool {
	for _, e := range []error{ErrMissing, ErrNoKey, ErrUnknownKey, ErrUndecryptable, errBadRef} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Key is one AES-256 key and its id. The id is stored beside each
// ciphertext (secrets.key_id) and names the key that opens it.
type Key struct {
	ID  string
	key []byte
}

// Keyring is the current key, which seals, and the old ones, which only
// open. The zero Keyring (no key) refuses everything with ErrNoKey.
type Keyring struct {
	current *Key
	byID    map[string]*Key
}

// ParseKey reads one key: base64 (standard or URL alphabet, padded or not)
// of exactly 32 bytes, optionally prefixed by an id and a colon
// ("2026-11:BASE64"). Without an id, the id is derived from the key (the
// first 8 bytes of its SHA-256, in hex), so every node given the same key
// agrees on it. The error never holds the key.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	id, b64, hasID := strings.Cut(s, ":")
	if !hasID {
		b64, id = id, ""
	}
	raw, err := decodeKey(b64)
	if err != nil {
		return nil, err
	}
	if hasID {
		if err := checkKeyID(id); err != nil {
			return nil, err
		}
	} else {
		sum := sha256.Sum256(raw)
		id = hex.EncodeToString(sum[:8])
	}
	return &Key{ID: id, key: raw}, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("secrets: a key must be %d bytes, this one is %d (make one with `openssl rand -base64 32`)", KeySize, len(raw))
			}
			return raw, nil
		}
	}
	return nil, errors.New("secrets: a key must be base64 of 32 bytes, optionally after an id and a colon (ID:BASE64)")
}

// MaxKeyIDLen bounds a key id: the column is VARCHAR(64).
const MaxKeyIDLen = 64

func checkKeyID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen || strings.IndexFunc(id, func(r rune) bool {
		return r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.", r)
	}) >= 0 {
		return fmt.Errorf("secrets: a key id must be 1 to %d letters, digits, '-', '_' or '.'", MaxKeyIDLen)
	}
	return nil
}

// NewKeyring builds a keyring of current (empty: none) and old, each in
// ParseKey's form. Two different keys of one id are refused: a row names
// its key by id.
func NewKeyring(current string, old []string) (*Keyring, error) {
	kr := &Keyring{byID: map[string]*Key{}}
	add := func(s string, isCurrent bool) error {
		k, err := ParseKey(s)
		if err != nil {
			return err
		}
		if prev, ok := kr.byID[k.ID]; ok {
			if string(prev.key) != string(k.key) {
				return fmt.Errorf("secrets: two different keys have the id %q", k.ID)
			}
		} else {
			kr.byID[k.ID] = k
		}
		if isCurrent {
			kr.current = kr.byID[k.ID]
		}
		return nil
	}
	if strings.TrimSpace(current) != "" {
		if err := add(current, true); err != nil {
			return nil, fmt.Errorf("current key: %w", err)
		}
	}
	for i, s := range old {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if err := add(s, false); err != nil {
			return nil, fmt.Errorf("old key %d: %w", i+1, err)
		}
	}
	if kr.current == nil && len(kr.byID) > 0 {
		return nil, errors.New("secrets: old keys are configured but no current key")
	}
	return kr, nil
}

// LoadKeyring builds the keyring of a node's configuration: key (the
// current key), oldKeys (comma-separated) and keyFile, whose lines are
// keys, the first the current one (empty lines and # comments skipped).
// A file and a key together are refused: which one seals would be a guess.
func LoadKeyring(key, oldKeys, keyFile string) (*Keyring, error) {
	var old []string
	if strings.TrimSpace(oldKeys) != "" {
		old = strings.Split(oldKeys, ",")
	}
	if keyFile != "" {
		if strings.TrimSpace(key) != "" {
			return nil, errors.New("secrets: set secrets.key or secrets.key_file, not both")
		}
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("secrets.key_file: %w", err)
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return nil, fmt.Errorf("secrets.key_file %s holds no key", keyFile)
		}
		key, old = lines[0], append(lines[1:], old...)
	}
	kr, err := NewKeyring(key, old)
	if err != nil {
		return nil, err
	}
	return kr, nil
}

// Configured says whether the keyring has a current key.
func (kr *Keyring) Configured() bool { return kr != nil && kr.current != nil }

// CurrentID is the id of the current key, "" without one.
func (kr *Keyring) CurrentID() string {
	if !kr.Configured() {
		return ""
	}
	return kr.current.ID
}

// Sealed is a value as the secrets table keeps it: ciphertext and nonce
// in standard base64, and the id of the key.
type Sealed struct {
	Ciphertext string
	Nonce      string
	KeyID      string
}

// Seal encrypts value under the current key with name as associated data.
func (kr *Keyring) Seal(name string, value []byte) (Sealed, error) {
	if !kr.Configured() {
		return Sealed{}, ErrNoKey
	}
	aead, err := newAEAD(kr.current.key)
	if err != nil {
		return Sealed{}, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("secrets: random nonce: %w", err)
	}
	ct := aead.Seal(nil, nonce, value, []byte(name))
	return Sealed{Ciphertext: base64.StdEncoding.EncodeToString(ct), Nonce: base64.StdEncoding.EncodeToString(nonce), KeyID: kr.current.ID}, nil
}

// Open decrypts s, the value of the secret name. The error says which key
// or what failed, never a byte of the value.
func (kr *Keyring) Open(name string, s Sealed) ([]byte, error) {
	if kr == nil || len(kr.byID) == 0 {
		return nil, ErrNoKey
	}
	k, ok := kr.byID[s.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q; configured: %s)", ErrUnknownKey, s.KeyID, strings.Join(kr.ids(), ", "))
	}
	ct, err1 := base64.StdEncoding.DecodeString(s.Ciphertext)
	nonce, err2 := base64.StdEncoding.DecodeString(s.Nonce)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: its ciphertext or nonce is not base64", ErrUndecryptable)
	}
	aead, err := newAEAD(k.key)
	if err != nil {
		return nil, err
	}
	if len(nonce) != aead.NonceSize() {
		return nil, fmt.Errorf("%w: its nonce has %d bytes, not %d", ErrUndecryptable, len(nonce), aead.NonceSize())
	}
	v, err := aead.Open(nil, nonce, ct, []byte(name))
	if err != nil {
		return nil, fmt.Errorf("%w with key %q under its name (changed, or copied from another secret)", ErrUndecryptable, s.KeyID)
	}
	return v, nil
}

func (kr *Keyring) ids() []string {
	out := make([]string, 0, len(kr.byID))
	for id := range kr.byID {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return cipher.NewGCM(block)
}
