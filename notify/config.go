package notify

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/chimesched/chime/internal/loopback"
)

// TLS modes.
const (
	TLSNone     = "none"     // plain SMTP; only for a relay on a trusted network
	TLSStartTLS = "starttls" // upgrade after connecting; required, not opportunistic
	TLSImplicit = "tls"      // TLS from the first byte (SMTPS, port 465)
)

// Config is the SMTP setup, as found under smtp: in chime.yaml.
type Config struct {
	Host     string // required
	Port     int    // default: 25 for none, 587 for starttls, 465 for tls
	Username string // optional; auth (PLAIN or LOGIN) only when set
	Password string
	From     string // required; "chime <chime@example.com>" or a bare address
	TLS      string // TLSNone, TLSStartTLS or TLSImplicit; default TLSStartTLS
}

// WithDefaults returns c with zero fields filled.
func (c Config) WithDefaults() Config {
	if c.TLS == "" {
		c.TLS = TLSStartTLS
	}
	if c.Port == 0 {
		switch c.TLS {
		case TLSNone:
			c.Port = 25
		case TLSImplicit:
			c.Port = 465
		default:
			c.Port = 587
		}
	}
	return c
}

// validate checks a config that has had WithDefaults applied. Errors name
// the setting as the config file spells it.
func (c Config) validate() error {
	var errs []error
	if strings.TrimSpace(c.Host) == "" {
		errs = append(errs, errors.New("smtp.host: required"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("smtp.port: %d is not a TCP port (1-65535)", c.Port))
	}
	if c.From == "" {
		errs = append(errs, errors.New("smtp.from: required (the sender address)"))
	} else if _, err := mail.ParseAddress(c.From); err != nil {
		errs = append(errs, fmt.Errorf("smtp.from: %q is not an email address: %w", c.From, err))
	}
	switch c.TLS {
	case TLSNone, TLSStartTLS, TLSImplicit:
	default:
		errs = append(errs, fmt.Errorf("smtp.tls: %q is not one of none, starttls, tls", c.TLS))
	}
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("smtp.username: required when smtp.password is set"))
	}
	if c.TLS == TLSNone && c.Username != "" && !loopback.Host(c.Host) {
		errs = append(errs, errors.New("smtp.tls: none would send the password in clear; use starttls or tls"))
	}
	return errors.Join(errs...)
}
