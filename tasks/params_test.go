package tasks_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks"
)

type bindParams struct {
	Command  string         `json:"command"`
	Duration tasks.Duration `json:"duration"`
	Count    int            `json:"count"`
	Inner    struct {
		Flag bool `json:"flag"`
	} `json:"inner"`
}

func TestBind(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		params  string
		wantErr string
	}{
		{name: "Empty", params: ""},
		{name: "Null", params: "null"},
		{name: "Object", params: `{"command":"ls","duration":"1s","count":2,"inner":{"flag":true}}`},
		{name: "UnknownField", params: `{"comand":"ls"}`, wantErr: `params: unknown field "comand"`},
		{name: "WrongType", params: `{"count":"two"}`, wantErr: `params: field "count": expected an integer, got JSON string`},
		{name: "NestedWrongType", params: `{"inner":{"flag":1}}`, wantErr: `params: field "inner.flag": expected a boolean, got JSON number`},
		{name: "BadDuration", params: `{"command":"ls","duration":"10 parsecs"}`, wantErr: `params: field "duration": invalid duration "10 parsecs"`},
		{name: "DurationNumber", params: `{"duration":5}`, wantErr: `params: field "duration": expected a duration string`},
		{name: "NegativeDuration", params: `{"duration":"-1s"}`, wantErr: `params: field "duration": duration "-1s" must not be negative`},
		{name: "NotObject", params: `[1,2]`, wantErr: "params: must be a JSON object, got array"},
		{name: "Syntax", params: `{"command":`, wantErr: "params: "},
		{name: "Trailing", params: `{} {}`, wantErr: "params: unexpected data after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := &tasks.Job{Params: json.RawMessage(tt.params)}
			var p bindParams
			err := job.Bind(&p)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}

	t.Run("Values", func(t *testing.T) {
		t.Parallel()
		job := &tasks.Job{Params: json.RawMessage(`{"command":"ls","duration":"1m30s","inner":{"flag":true}}`)}
		var p bindParams
		require.NoError(t, job.Bind(&p))
		require.Equal(t, "ls", p.Command)
		require.Equal(t, 90*time.Second, p.Duration.Std())
		require.True(t, p.Inner.Flag)
	})

	t.Run("FieldError", func(t *testing.T) {
		t.Parallel()
		err := tasks.FieldError("url", "must be absolute, got %q", "x")
		require.EqualError(t, err, `params: field "url": must be absolute, got "x"`)
		var pe *tasks.ParamError
		require.True(t, errors.As(err, &pe))
		require.Equal(t, "url", pe.Field)
	})

	t.Run("DurationRoundTrip", func(t *testing.T) {
		t.Parallel()
		b, err := json.Marshal(tasks.Duration(250 * time.Millisecond))
		require.NoError(t, err)
		require.JSONEq(t, `"250ms"`, string(b))
	})
}
