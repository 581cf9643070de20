package validate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/validate"
)

// TestTextWalk: Text finds a NUL at any depth of a request and
// names it by its JSON path; JSON documents are left to their own checks.
func TestTextWalk(t *testing.T) {
	t.Parallel()
	type inner struct {
		Tags []string          `json:"tags"`
		Meta map[string]string `json:"meta"`
	}
	type embedded struct {
		Note string `json:"note"`
	}
	type req struct {
		embedded
		Name   *string         `json:"name"`
		Inner  *inner          `json:"inner"`
		Params json.RawMessage `json:"params"`
		Skip   string          `json:"-"`
	}
	s := func(v string) *string { return &v }
	for want, v := range map[string]req{
		"":              {Name: s("ok"), Params: json.RawMessage(`{"a":"\u0000"}`), Skip: "\x00", Inner: &inner{Tags: []string{"a"}}},
		"name":          {Name: s("a\x00")},
		"note":          {embedded: embedded{Note: "\x00"}},
		"inner.tags[1]": {Inner: &inner{Tags: []string{"a", "b\x00"}}},
		"inner.meta.k":  {Inner: &inner{Meta: map[string]string{"k": "\x00"}}},
		"inner.meta":    {Inner: &inner{Meta: map[string]string{"\x00": "v"}}},
	} {
		err := validate.Text(&v)
		if want == "" {
			require.NoError(t, err)
			continue
		}
		e, ok := errors.AsType[*validate.Error](err)
		require.True(t, ok, "%s: %v", want, err)
		require.Equal(t, want, e.Field)
		require.Contains(t, e.Message, "NUL")
	}
}
