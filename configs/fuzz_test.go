package configs

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzConfigValue feeds arbitrary configurations rows (name, value), as an
// admin may write them with plain SQL, through CheckSetting and
// WithSettings. Neither may panic; a refused row leaves the value as it
// was; whatever is accepted passes validation; and no message shows a
// secret's value. The seeds run in every `go test`;
// `go test -fuzz FuzzConfigValue ./configs` explores.
func FuzzConfigValue(f *testing.F) {
	for _, s := range [][2]string{
		{"taskengine.pool_size", "8"}, {"taskengine.pool_size", "-1"}, {"taskengine.pool_size", "99999999999999999999"},
		{"taskengine.poll_interval", "250ms"}, {"taskengine.poll_interval", "-1s"}, {"taskengine.poll_interval", "2562047h"},
		{"retention_days", "200000"}, {"retention_days", "0"}, {"retention_days", "36500"},
		{"log.level", "debug"}, {"log.level", "LOUD\n"}, {"smtp.host", "mail.example.com"}, {"smtp.host", "a b"},
		{"smtp.from", "chime <chime@example.com>"}, {"smtp.password", "hunter2\r\nQUIT"}, {"smtp.port", "0x19"},
		{"smtp.tls", "none"}, {"cluster.failover_after", "1ns"}, {"scheduleengine.enabled", "T"},
		{"node.id", "x"}, {"api.token", "t"}, {"database.dsn", "root:pw@/x"}, {"taskengine.poolsize", "8"},
		{"", ""}, {"..", "1"}, {"pinned", "x"}, {"taskengine", "1"}, {strings.Repeat("a.", 300), "1"},
	} {
		f.Add(s[0], s[1])
	}
	base, err := Load("", func(string) string { return "" })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		cerr := base.CheckSetting(name, value)
		got, refused := base.WithSettings(map[string]string{name: value})
		if got.validate() != nil {
			t.Fatalf("accepted %q = %q into an invalid configuration: %v", name, value, got.validate())
		}
		if (cerr == nil) != (len(refused) == 0) {
			t.Fatalf("CheckSetting (%v) and WithSettings (%v) disagree on %q = %q", cerr, refused, name, value)
		}
		if len(refused) > 0 && !reflect.DeepEqual(got, base) {
			t.Fatalf("refused %q = %q but the configuration changed", name, value)
		}
		for _, e := range refused {
			if e.Key == "" && strings.TrimSpace(name) != "" {
				t.Fatalf("refusal names no key: %v", e)
			}
			if IsSecret(name) && len(value) >= 4 && strings.Contains(e.Error(), value) && !strings.Contains(name, value) {
				t.Fatalf("message shows the secret value: %v", e)
			}
		}
	})
}
