package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks"
)

type nopTask struct{ tasks.Base }

func (*nopTask) Execute(context.Context, *tasks.Job) error { return nil }

type validatingTask struct{ nopTask }

func (*validatingTask) Validate(params json.RawMessage) error {
	var p struct {
		N int `json:"n"`
	}
	return tasks.DecodeParams(params, &p)
}

func TestRegistry(t *testing.T) {
	t.Parallel()

	t.Run("RegisterAndNew", func(t *testing.T) {
		t.Parallel()
		r := tasks.NewRegistry()
		require.NoError(t, r.Register("nop", func() tasks.Task { return &nopTask{} }))
		a, err := r.New("nop")
		require.NoError(t, err)
		b, err := r.New("nop")
		require.NoError(t, err)
		require.NotSame(t, a, b, "each job gets a fresh instance")
	})

	t.Run("Duplicate", func(t *testing.T) {
		t.Parallel()
		r := tasks.NewRegistry()
		f := func() tasks.Task { return &nopTask{} }
		require.NoError(t, r.Register("nop", f))
		err := r.Register("nop", f)
		require.ErrorContains(t, err, `"nop"`)
		require.ErrorContains(t, err, "already registered")
		require.Panics(t, func() { r.MustRegister("nop", f) })
	})

	t.Run("EmptyKindAndNilFactory", func(t *testing.T) {
		t.Parallel()
		r := tasks.NewRegistry()
		require.ErrorContains(t, r.Register("", func() tasks.Task { return &nopTask{} }), "empty kind")
		require.ErrorContains(t, r.Register("x", nil), "nil factory")
	})

	t.Run("UnknownListsKinds", func(t *testing.T) {
		t.Parallel()
		r := tasks.NewRegistry()
		for _, k := range []string{"zeta", "alpha", "mid"} {
			r.MustRegister(k, func() tasks.Task { return &nopTask{} })
		}
		_, err := r.New("shel")
		require.ErrorIs(t, err, tasks.ErrUnknownTask)
		require.EqualError(t, err, `tasks: unknown task kind "shel" (registered: alpha, mid, zeta)`)
		require.Equal(t, []string{"alpha", "mid", "zeta"}, r.Kinds())

		_, err = tasks.NewRegistry().New("x")
		require.ErrorContains(t, err, "(registered: none)")
	})

	t.Run("Validate", func(t *testing.T) {
		t.Parallel()
		r := tasks.NewRegistry()
		r.MustRegister("v", func() tasks.Task { return &validatingTask{} })
		r.MustRegister("nop", func() tasks.Task { return &nopTask{} })
		require.NoError(t, r.Validate("v", json.RawMessage(`{"n":1}`)))
		require.EqualError(t, r.Validate("v", json.RawMessage(`{"m":1}`)), `params: unknown field "m"`)
		require.NoError(t, r.Validate("nop", json.RawMessage(`{"anything":1}`)), "no Validator, nothing to check")
		require.True(t, errors.Is(r.Validate("nope", nil), tasks.ErrUnknownTask))
	})
}
