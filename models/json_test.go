package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMergeParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, defaults, params, want, err string
	}{
		{name: "params win key by key", defaults: `{"a":1,"b":{"x":1}}`, params: `{"b":{"y":2},"c":3}`, want: `{"a":1,"b":{"y":2},"c":3}`},
		{name: "no params", defaults: `{"a":1}`, params: ``, want: `{"a":1}`},
		{name: "null params", defaults: `{"a":1}`, params: `null`, want: `{"a":1}`},
		{name: "no defaults", defaults: ``, params: `{"a":2}`, want: `{"a":2}`},
		{name: "neither", want: ``},
		{name: "defaults not an object", defaults: `[1]`, params: `{}`, err: "default_params is not a JSON object"},
		{name: "params not an object", defaults: `{}`, params: `"x"`, err: "params is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MergeParams(JSON(tt.defaults), JSON(tt.params))
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			if tt.want == "" {
				require.Empty(t, got)
				return
			}
			require.JSONEq(t, tt.want, string(got))
		})
	}
}
