package app

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/configs"
)

// TokenFileName is the token file's name in DefaultTokenFile's directory.
const TokenFileName = "api.token"

// DefaultTokenFile is where `chime serve` keeps the API token it generates
// when api.token and api.token_file are empty, and where the CLI looks for
// it: $XDG_CONFIG_HOME/chime/api.token (~/.config/chime/api.token on Linux,
// the platform's user configuration directory elsewhere).
func DefaultTokenFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no user configuration directory for the API token file (%w): "+
			"set api.token (CHIME_API_TOKEN) or api.token_file (CHIME_API_TOKEN_FILE)", err)
	}
	return filepath.Join(dir, "chime", TokenFileName), nil
}

// TokenFile returns cfg's api.token_file, or DefaultTokenFile.
func TokenFile(cfg *configs.Config) (string, error) {
	if cfg.API.TokenFile != "" {
		return cfg.API.TokenFile, nil
	}
	return DefaultTokenFile()
}

// EnsureToken makes the API authenticated by default: with api.token
// empty, it sets cfg.API.Token from the token file, creating the file with
// a new random token (32 bytes, base64url) when there is none. The file is
// created with mode 0600 in a directory created 0700, and an existing one
// that group or others can read is refused: a token is the key to running
// commands on every node. Nodes starting at once on one host end up with
// the same token. Rotation: replace or delete the file and restart.
func EnsureToken(cfg *configs.Config, log logrus.FieldLogger) error {
	if cfg.API.Token != "" {
		return nil
	}
	path, err := TokenFile(cfg)
	if err != nil {
		return err
	}
	tok, err := ReadTokenFile(path)
	if err == nil {
		cfg.API.Token = tok
		log.WithField("token_file", path).Info("api: using the token in the token file")
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tok, created, err := createTokenFile(path)
	if err != nil {
		return err
	}
	cfg.API.Token = tok
	if created {
		log.WithField("token_file", path).Warn("api: api.token is empty; generated a token into the token file " +
			"(readable only by this user; the chime CLI reads it from there)")
	}
	return nil
}

// createTokenFile writes a new token to path unless another process got
// there first, in which case it reads that one.
func createTokenFile(path string) (string, bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false, fmt.Errorf("api token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	// Written under a temporary name and linked into place, so a reader
	// never sees a half-written file and only one of two racing nodes wins.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			got, err := ReadTokenFile(path)
			return got, false, err
		}
		return "", false, fmt.Errorf("api token file %s: %w", path, err)
	}
	return tok, true, nil
}

// ReadTokenFile reads a token file: one line of at least
// api.MinTokenLength characters, in a regular file that only its owner can
// read. A missing file is an error wrapping fs.ErrNotExist.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("api token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("api token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("api token file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("api token file %s is readable by group or others (mode %#o): "+
			"run chmod 600 %s, and rotate the token if others may have read it", path, st.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("api token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	switch {
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("api token file %s must hold the token on one line", path)
	case len(tok) < api.MinTokenLength:
		return "", fmt.Errorf("api token file %s: the token must have at least %d characters, it has %d",
			path, api.MinTokenLength, len(tok))
	case strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "", fmt.Errorf("api token file %s: the token must not contain spaces or control characters", path)
	}
	return tok, nil
}
