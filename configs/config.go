// Package configs loads chime's configuration: the embedded default
// chime.yaml, then an optional file, then CHIME_* environment variables.
// A bad setting is an error that names the setting.
//
// configs imports only the standard library, a YAML parser and models
// (for the rule of node tags).
package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/chimesched/chime/internal/loopback"
	"github.com/chimesched/chime/models"
)

//go:embed chime.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration file.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Duration is a time.Duration written as "4s" in YAML and environment.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Config is the whole configuration.
type Config struct {
	Database       Database       `yaml:"database"`
	Node           Node           `yaml:"node"`
	Log            Log            `yaml:"log"`
	ScheduleEngine ScheduleEngine `yaml:"scheduleengine"`
	TaskEngine     TaskEngine     `yaml:"taskengine"`
	API            API            `yaml:"api"`
	SMTP           SMTP           `yaml:"smtp"`
	Cluster        Cluster        `yaml:"cluster"`
	Secrets        Secrets        `yaml:"secrets"`
	ShutdownGrace  Duration       `yaml:"shutdown_grace"`
	RetentionDays  int            `yaml:"retention_days"`

	// pinned are keys set by the environment or a flag (Pin): rows of the
	// configurations table do not change them.
	pinned map[string]bool
}

// Database selects the database.
type Database struct {
	Driver       string `yaml:"driver"`
	DSN          string `yaml:"dsn"`
	MaxOpenConns int    `yaml:"max_open_conns"`
	// CompatibleSchema declares a schema newer than this binary's
	// migrations safe to run against: a node starts on a database whose
	// schema version is at most this (0: only the schemas it knows).
	// Upgrade notes in CHANGELOG.md say which versions allow it.
	CompatibleSchema int64 `yaml:"compatible_schema"`
}

// Node names this process in the cluster.
type Node struct {
	ID string `yaml:"id"`
	// Tags are this node's tags, comma-separated (models.ParseTags): a
	// job that requires tags is claimed only by nodes that have them all.
	Tags string `yaml:"tags"`
}

// TagList returns the node's tags parsed (validate has checked them).
func (n *Node) TagList() []string {
	tags, _ := models.ParseTags(n.Tags)
	return tags
}

// Log sets up logrus.
type Log struct {
	Format string `yaml:"format"`
	Level  string `yaml:"level"`
}

// ScheduleEngine configures the schedule engine.
type ScheduleEngine struct {
	Enabled          bool     `yaml:"enabled"`
	SyncInterval     Duration `yaml:"sync_interval"`
	MisfireThreshold Duration `yaml:"misfire_threshold"`
	FireAllCap       int      `yaml:"fire_all_cap"`
	BatchSize        int      `yaml:"batch_size"`
	BatchWait        Duration `yaml:"batch_wait"`
	FireAhead        Duration `yaml:"fire_ahead"`
}

// TaskEngine configures the task engine.
type TaskEngine struct {
	Enabled      bool     `yaml:"enabled"`
	PollInterval Duration `yaml:"poll_interval"`
	WakeInterval Duration `yaml:"wake_interval"`
	PoolSize     int      `yaml:"pool_size"`
	// Backlog is how many jobs past its free workers a fire may hand this
	// node, to wait in memory for a worker (taskengine.Config.Backlog; 0:
	// none).
	Backlog         int      `yaml:"backlog"`
	ControlInterval Duration `yaml:"control_interval"`
	// DrainTimeout is how long a draining node lets its running jobs
	// finish before it hands them back to pending (0: it waits for them).
	DrainTimeout Duration `yaml:"drain_timeout"`
}

// API configures the HTTP API.
type API struct {
	Addr  string `yaml:"addr"`
	Token string `yaml:"token"`
	// TokenFile is where `chime serve` keeps the token it generates when
	// Token is empty, and where the CLI reads it (empty: the default,
	// see app.DefaultTokenFile).
	TokenFile string `yaml:"token_file"`
	TLSCert   string `yaml:"tls_cert"`
	TLSKey    string `yaml:"tls_key"`
	// TLSProxy says that browsers reach this node only through a proxy
	// that terminates TLS: the console's cookies are then Secure with the
	// __Host- prefix and every answer carries HSTS, as when the node serves
	// TLS itself.
	TLSProxy bool `yaml:"tls_proxy"`
}

// SMTP configures outgoing email.
type SMTP struct {
	Host     string `yaml:"host"`
	Port     int    `yaml:"port"`
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	From     string `yaml:"from"`
	TLS      string `yaml:"tls"`
}

// Cluster configures heartbeats and failover.
type Cluster struct {
	Heartbeat     Duration `yaml:"heartbeat"`
	FailoverAfter Duration `yaml:"failover_after"`
}

// Secrets gives the keys of the secrets table (package secrets): never
// a configurations row, so that whoever reads the database cannot read
// the keys with it.
type Secrets struct {
	// Key is the current key: base64 of 32 bytes, optionally "ID:" before
	// it. It seals new values and opens what it sealed.
	Key string `yaml:"key"`
	// OldKeys are keys that only open, comma-separated, until chime
	// secret rotate has sealed every row with Key.
	OldKeys string `yaml:"old_keys"`
	// KeyFile holds the keys instead, one a line, the current first.
	KeyFile string `yaml:"key_file"`
}

// EnvPrefix starts every environment override.
const EnvPrefix = "CHIME_"

// Load reads the embedded defaults, then file (if not empty), then the
// environment given by getenv (os.Getenv when nil), and validates the result.
func Load(file string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var c Config
	if err := decode(defaultYAML, &c); err != nil {
		return nil, fmt.Errorf("embedded chime.yaml: %w", err)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if err := decode(b, &c); err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
	}
	set, err := applyEnv(reflect.ValueOf(&c).Elem(), "", getenv)
	if err != nil {
		return nil, err
	}
	c.Pin(set...)
	if c.Node.ID == "" {
		host, _ := os.Hostname()
		c.Node.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func decode(b []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	// An empty file is no error: yaml reports it as io.EOF.
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// applyEnv walks the struct by its yaml tags and overrides each leaf from
// CHIME_<PATH>, so every key in chime.yaml has an environment form for free.
// It returns the keys it set.
func applyEnv(v reflect.Value, path string, getenv func(string) string) ([]string, error) {
	t := v.Type()
	var set []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := f.Tag.Get("yaml")
		name := key
		if path != "" {
			name = path + "." + key
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct {
			sub, err := applyEnv(fv, name, getenv)
			if err != nil {
				return nil, err
			}
			set = append(set, sub...)
			continue
		}
		env := EnvName(name)
		raw := getenv(env)
		if raw == "" {
			continue
		}
		if err := setValue(fv, raw); err != nil {
			return nil, fmt.Errorf("%s (%s=%s): %w", name, env, quoteValue(name, raw), err)
		}
		set = append(set, name)
	}
	return set, nil
}

// EnvName returns the environment variable that overrides a key path such as "database.dsn".
func EnvName(path string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

func setValue(fv reflect.Value, raw string) error {
	if fv.Type() == reflect.TypeOf(Duration(0)) {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		fv.SetInt(int64(n))
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		fv.SetBool(b)
	default:
		return fmt.Errorf("unsupported kind %s", fv.Kind())
	}
	return nil
}

// problem is one invalid key, for Load's message or a refused row.
type problem struct{ key, msg string }

func (c *Config) validate() error {
	var errs []error
	for _, p := range c.problems() {
		errs = append(errs, fmt.Errorf("%s (%s): %s", p.key, EnvName(p.key), p.msg))
	}
	return errors.Join(errs...)
}

// durationBound is the range one duration setting may take.
type durationBound struct {
	key      string
	min, max time.Duration
	// zeroOff also allows 0, which turns the feature off.
	zeroOff bool
}

// durationBounds lists every duration setting with its range, checked
// alike for the file, the environment and configurations rows (a row out
// of range is refused when written through the API, and logged and
// ignored when a node reads one written by SQL). The minimums keep a node
// from spinning: at 1ns, the heartbeat, poll, control and sync loops each
// burned a core and flooded the log with slow queries. The maximums keep
// the longer windows the engines derive (three failover windows) from
// overflowing, and the waits a fire may be held for short. README's
// configuration table repeats them.
var durationBounds = []durationBound{
	{"scheduleengine.sync_interval", 100 * time.Millisecond, 24 * time.Hour, false},
	// Shorter, and a fire late by a batch's write is a misfire.
	{"scheduleengine.misfire_threshold", time.Second, 24 * time.Hour, false},
	// Every fire of a burst may wait this long for the next.
	{"scheduleengine.batch_wait", time.Millisecond, time.Second, false},
	// A prepared batch holds its schedules' rows that long, and a pause
	// waits as long (scheduleengine.Config.FireAhead says the same).
	{"scheduleengine.fire_ahead", 10 * time.Millisecond, 2 * time.Second, true},
	{"taskengine.poll_interval", 100 * time.Millisecond, 24 * time.Hour, false},
	{"taskengine.control_interval", 100 * time.Millisecond, 24 * time.Hour, false},
	{"taskengine.drain_timeout", time.Second, 24 * time.Hour, true},
	// Below, the watch's reads would cost more than the milliseconds they
	// save; above, the poll does as well.
	{"taskengine.wake_interval", 10 * time.Millisecond, 10 * time.Second, true},
	{"cluster.heartbeat", 100 * time.Millisecond, 24 * time.Hour, false},
	{"cluster.failover_after", time.Second, 24 * time.Hour, false},
	// A task's Stop needs time to act.
	{"shutdown_grace", time.Second, 24 * time.Hour, false},
}

// formatDuration writes d as a bound reads best: "24h", "1m", "100ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "h0m0s") {
		return strings.TrimSuffix(s, "0m0s")
	}
	if strings.HasSuffix(s, "m0s") {
		return strings.TrimSuffix(s, "0s")
	}
	return s
}

// problems checks everything a node checks at start, including what the
// engines and the mailer would refuse later, so that a value accepted in a
// configurations row cannot stop the next start.
func (c *Config) problems() []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	switch c.Database.Driver {
	case "sqlite", "mysql", "postgres":
	default:
		bad("database.driver", "unknown driver %q, want sqlite, mysql or postgres", c.Database.Driver)
	}
	if _, err := models.ParseTags(c.Node.Tags); err != nil {
		bad("node.tags", "%v", err)
	}
	if c.Database.DSN == "" {
		bad("database.dsn", "must not be empty")
	}
	if c.Database.MaxOpenConns < 0 {
		bad("database.max_open_conns", "must not be negative, got %d", c.Database.MaxOpenConns)
	}
	if c.Database.CompatibleSchema < 0 || c.Database.CompatibleSchema > 99999 {
		bad("database.compatible_schema", "must be a schema version between 0 and 99999, got %d", c.Database.CompatibleSchema)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format", "unknown format %q, want text or json", c.Log.Format)
	}
	switch strings.ToLower(c.Log.Level) {
	case "trace", "debug", "info", "warn", "warning", "error":
	default:
		bad("log.level", "unknown level %q, want trace, debug, info, warn or error", c.Log.Level)
	}
	for _, b := range durationBounds {
		fv, _ := field(reflect.ValueOf(c).Elem(), strings.Split(b.key, "."))
		d := time.Duration(fv.Int())
		if (d == 0 && b.zeroOff) || (d >= b.min && d <= b.max) {
			continue
		}
		off := ""
		if b.zeroOff {
			off = "0 (off) or "
		}
		bad(b.key, "must be %sbetween %s and %s, got %s", off, formatDuration(b.min), formatDuration(b.max), formatDuration(d))
	}
	if fa := c.ScheduleEngine.FireAhead; fa > 0 && fa >= c.ScheduleEngine.MisfireThreshold {
		bad("scheduleengine.fire_ahead", "must be below scheduleengine.misfire_threshold (%s), got %s",
			c.ScheduleEngine.MisfireThreshold.D(), fa.D())
	}
	if c.Cluster.FailoverAfter > 0 && c.Cluster.FailoverAfter <= c.Cluster.Heartbeat {
		bad("cluster.failover_after", "must be longer than cluster.heartbeat (%s)", c.Cluster.Heartbeat.D())
	}
	between := func(key string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(key, "must be between %d and %d, got %d", lo, hi, v)
		}
	}
	between("taskengine.pool_size", c.TaskEngine.PoolSize, 1, MaxPoolSize)
	between("taskengine.backlog", c.TaskEngine.Backlog, 0, MaxBacklog)
	between("scheduleengine.batch_size", c.ScheduleEngine.BatchSize, 1, MaxBatchSize)
	between("scheduleengine.fire_all_cap", c.ScheduleEngine.FireAllCap, 1, MaxFireAllCap)
	// 0 keeps finished jobs forever; past the maximum, days × 24h
	// overflows time.Duration into an age that deletes every finished job.
	between("retention_days", c.RetentionDays, 0, MaxRetentionDays)
	switch {
	case c.API.TLSCert != "" && c.API.TLSKey == "":
		bad("api.tls_key", "must be set with api.tls_cert (%s)", c.API.TLSCert)
	case c.API.TLSKey != "" && c.API.TLSCert == "":
		bad("api.tls_cert", "must be set with api.tls_key (%s)", c.API.TLSKey)
	}
	ps = append(ps, c.SMTP.problems()...)
	return ps
}

// problems checks the smtp section as the mailer does when smtp.host is
// set (with no host, email is off and the rest is not used).
func (s *SMTP) problems() []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	switch s.TLS {
	case "none", "starttls", "tls":
	default:
		bad("smtp.tls", "unknown mode %q, want none, starttls or tls", s.TLS)
	}
	if s.Port <= 0 || s.Port > 65535 {
		bad("smtp.port", "out of range: %d", s.Port)
	}
	if strings.IndexFunc(s.Host, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		bad("smtp.host", "must not contain white space or control characters")
	}
	if strings.IndexFunc(s.Username, unicode.IsControl) >= 0 {
		bad("smtp.username", "must not contain control characters")
	}
	if strings.IndexFunc(s.Password, func(r rune) bool { return r == '\r' || r == '\n' || r == 0 }) >= 0 {
		bad("smtp.password", "must not contain line breaks or NUL")
	}
	if s.From != "" {
		if _, err := mail.ParseAddress(s.From); err != nil {
			bad("smtp.from", "%q is not an email address: %v", s.From, err)
		}
	}
	if s.Host == "" {
		return ps
	}
	if s.From == "" {
		bad("smtp.from", "required when smtp.host is set (the sender address)")
	}
	if s.Password != "" && s.Username == "" {
		bad("smtp.username", "required when smtp.password is set")
	}
	if s.TLS == "none" && s.Username != "" && !loopback.Host(s.Host) {
		bad("smtp.tls", "none would send the password in clear to %s; use starttls or tls", s.Host)
	}
	return ps
}

// Keys lists every configuration key path, in file order.
func Keys() []string {
	var keys []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Tag.Get("yaml")
			if path != "" {
				name = path + "." + name
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, name)
				continue
			}
			keys = append(keys, name)
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return keys
}

func field(v reflect.Value, path []string) (reflect.Value, bool) {
	for _, p := range path {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && f.Tag.Get("yaml") == p {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, v.Kind() != reflect.Struct
}
