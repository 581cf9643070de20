package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// wantBounds is the documented range of every duration setting (README,
// chime.yaml): a value below the minimum made a node spin (1ns of
// cluster.heartbeat or taskengine.poll_interval burned a core each).
var wantBounds = map[string][2]time.Duration{
	"scheduleengine.sync_interval":     {100 * time.Millisecond, 24 * time.Hour},
	"scheduleengine.misfire_threshold": {time.Second, 24 * time.Hour},
	"scheduleengine.batch_wait":        {time.Millisecond, time.Second},
	"scheduleengine.fire_ahead":        {10 * time.Millisecond, 2 * time.Second}, // or 0: off
	"taskengine.poll_interval":         {100 * time.Millisecond, 24 * time.Hour},
	"taskengine.control_interval":      {100 * time.Millisecond, 24 * time.Hour},
	"taskengine.wake_interval":         {10 * time.Millisecond, 10 * time.Second}, // or 0: off
	"taskengine.drain_timeout":         {time.Second, 24 * time.Hour},             // or 0: off
	"cluster.heartbeat":                {100 * time.Millisecond, 24 * time.Hour},
	"cluster.failover_after":           {time.Second, 24 * time.Hour},
	"shutdown_grace":                   {time.Second, 24 * time.Hour},
}

// TestDurationBounds: every duration setting has a lower and an upper
// bound, enforced alike for the file, the environment and a
// configurations row; the bounds themselves are accepted.
func TestDurationBounds(t *testing.T) {
	t.Parallel()
	var durations []string
	for _, k := range Keys() {
		if fv, _ := field(reflect.ValueOf(&Config{}).Elem(), strings.Split(k, ".")); fv.Type() == reflect.TypeOf(Duration(0)) {
			durations = append(durations, k)
		}
	}
	require.ElementsMatch(t, durations, keysOf(wantBounds), "every duration setting has its bounds in wantBounds")
	require.Len(t, durationBounds, len(wantBounds))
	for _, b := range durationBounds {
		require.Equal(t, wantBounds[b.key], [2]time.Duration{b.min, b.max}, b.key)
	}

	// A heartbeat short enough for failover_after's minimum, from a file
	// so that no key is pinned.
	base := map[string]string{"cluster.heartbeat": "100ms"}
	baseFile := writeYAML(t, base)
	c, err := Load(baseFile, env(nil))
	require.NoError(t, err)
	for key, b := range wantBounds {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			for _, bad := range []time.Duration{time.Nanosecond, b[0] - time.Nanosecond, b[1] + time.Nanosecond} {
				v := bad.String()
				// The environment.
				_, err := Load(baseFile, env(map[string]string{EnvName(key): v}))
				require.ErrorContains(t, err, key, "%s=%s from the environment", key, v)
				// The file.
				rows := map[string]string{key: v}
				for k, x := range base {
					if k != key {
						rows[k] = x
					}
				}
				_, err = Load(writeYAML(t, rows), env(nil))
				require.ErrorContains(t, err, key, "%s: %s in the file", key, v)
				// A row (API or plain SQL): refused, the value stays.
				require.NotNil(t, c.CheckSetting(key, v), "%s=%s as a row", key, v)
				got, refused := c.WithSettings(map[string]string{key: v})
				require.Len(t, refused, 1, "%s=%s as a row", key, v)
				before, _ := c.Value(key)
				after, _ := got.Value(key)
				require.Equal(t, before, after)
			}
			require.Nil(t, c.CheckSetting(key, b[0].String()), "the minimum of %s", key)
			if key == "scheduleengine.fire_ahead" || key == "taskengine.wake_interval" {
				require.Nil(t, c.CheckSetting(key, "0"), "0 turns it off")
			}
		})
	}
}

func keysOf(m map[string][2]time.Duration) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// writeYAML writes settings (key path → value) as a configuration file.
func writeYAML(t *testing.T, settings map[string]string) string {
	t.Helper()
	sections := map[string][]string{}
	var b strings.Builder
	for k, v := range settings {
		if section, leaf, ok := strings.Cut(k, "."); ok {
			sections[section] = append(sections[section], "  "+leaf+": "+v+"\n")
		} else {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	for section, lines := range sections {
		b.WriteString(section + ":\n" + strings.Join(lines, ""))
	}
	f := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o600))
	return f
}
