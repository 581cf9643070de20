package notify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/notify"
)

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		for tls, port := range map[string]int{"": 587, notify.TLSStartTLS: 587, notify.TLSImplicit: 465, notify.TLSNone: 25} {
			c := notify.Config{TLS: tls}.WithDefaults()
			require.Equal(t, port, c.Port, tls)
		}
		require.Equal(t, notify.TLSStartTLS, notify.Config{}.WithDefaults().TLS)
	})

	tests := []struct {
		name    string
		cfg     notify.Config
		wantErr string
	}{
		{"NoHost", notify.Config{From: "a@example.com"}, "smtp.host: required"},
		{"NoFrom", notify.Config{Host: "mx"}, "smtp.from: required"},
		{"BadFrom", notify.Config{Host: "mx", From: "not an address"}, `smtp.from: "not an address" is not an email address`},
		{"BadTLS", notify.Config{Host: "mx", From: "a@example.com", TLS: "ssl"}, `smtp.tls: "ssl" is not one of none, starttls, tls`},
		{"BadPort", notify.Config{Host: "mx", From: "a@example.com", Port: 70000}, "smtp.port: 70000 is not a TCP port"},
		{"PasswordWithoutUser", notify.Config{Host: "mx", From: "a@example.com", Password: "x"}, "smtp.username: required when smtp.password is set"},
		{"ClearPassword", notify.Config{Host: "mx.example.com", From: "a@example.com", TLS: "none", Username: "u"}, "smtp.tls: none would send the password in clear"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := notify.New(nil, &tt.cfg)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		m, err := notify.New(nil, &notify.Config{Host: "127.0.0.1", From: "chime <c@example.com>", TLS: "none", Username: "u"})
		require.NoError(t, err)
		require.NoError(t, m.Close(t.Context()))
	})
}
