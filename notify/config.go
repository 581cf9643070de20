package notify

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/loopback"
)

// TLS modes.
const (
	TLSNone     = "none"     // plain SMTP; only for a relay on a trusted network
	TLSStartTLS = "starttls" // upgrade after connecting; required, not opportunistic
	TLSImplicit = "tls"      // TLS from the first byte (SMTPS, port 465)
)

// Config configures a Mailer: the SMTP setup, as found under smtp: in
// chime.yaml, and the tuning of its queue and deliveries, whose zero
// values take the defaults given.
type Config struct {
	Host     string // required
	Port     int    // default: 25 for none, 587 for starttls, 465 for tls
	Username string // optional; auth (PLAIN or LOGIN) only when set
	Password string
	From     string // required; "chime <chime@example.com>" or a bare address
	TLS      string // TLSNone, TLSStartTLS or TLSImplicit; default TLSStartTLS

	QueueSize     int           // pending notices; default 100
	Workers       int           // concurrent deliveries; default 2
	Attempts      int           // tries per notice, the first included; default 3
	Backoff       time.Duration // wait before the first retry, doubled after; default 2s
	SendTimeout   time.Duration // per attempt, dial to QUIT; default 30s
	LogTailLines  int           // default 20
	SubjectPrefix string        // default "[chime]"
	Logger        *logrus.Logger
	// TLSConfig overrides the default (verify Host, TLS 1.2+), e.g. for a
	// private CA.
	TLSConfig *tls.Config
	// OnFailure is called for each notice finally lost, on a worker
	// goroutine, or on Notify's caller for a dropped one; for metrics. It
	// must be quick.
	OnFailure func(jobID int64, err error)
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
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.QueueSize, 100)
	def(&c.Workers, 2)
	def(&c.Attempts, 3)
	def(&c.LogTailLines, 20)
	if c.Backoff <= 0 {
		c.Backoff = 2 * time.Second
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = "[chime]"
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
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
