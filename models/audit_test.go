package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaskAuditRow(t *testing.T) {
	for _, c := range []struct{ typ, in, want string }{
		{"definition", `{"id": 9007199254740993, "default_params": {"headers": {"Authorization": "Bearer x"}, "env": {"A": "b"}, "url": "u"}}`,
			`{"id": 9007199254740993, "default_params": {"headers": {"Authorization": "********"}, "env": {"A": "********"}, "url": "u"}}`},
		{"schedule", `{"params": null}`, `{"params": null}`},
		{"workflow_step", `{"params": {"env": "not an object"}}`, `{"params": {"env": "not an object"}}`},
		{"alert_channel", `{"url": "https://h/x", "signing_key": "", "headers": "{\"K\": \"v\"}"}`,
			`{"url": "********", "signing_key": "", "headers": {"K": "********"}}`},
		{"alert_channel", `{"headers": "not json"}`, `{"headers": "********"}`},
		{"api_token", `{"token_sha256": "abc"}`, `{"token_sha256": "********"}`},
		{"configuration", `{"name": "SMTP.Password", "value": "p"}`, `{"name": "SMTP.Password", "value": "********"}`},
		{"configuration", `{"name": "log.level", "value": "debug"}`, `{"name": "log.level", "value": "debug"}`},
	} {
		require.JSONEq(t, c.want, string(MaskAuditRow(c.typ, []byte(c.in))), c.in)
	}
	require.Equal(t, "not json", string(MaskAuditRow("definition", []byte("not json"))))
}
