package strictjson

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type dur time.Duration

func (d *dur) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	*d = dur(v)
	return err
}

type params struct {
	Name  string `json:"name"`
	Every dur    `json:"every"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var p params
	require.NoError(t, Decode([]byte(`{"name":"a","every":"2s"}`), &p))
	require.Equal(t, params{Name: "a", Every: dur(2 * time.Second)}, p)
	require.ErrorContains(t, Decode([]byte(`{"nmae":"a"}`), &p), `unknown field "nmae"`)
	require.ErrorIs(t, Decode([]byte(`{"name":"a"} {}`), &p), ErrTrailing)
}

func TestFailingField(t *testing.T) {
	t.Parallel()
	data := []byte(`{"name":"a","every":"soon"}`)
	require.Error(t, Decode(data, &params{}))
	require.Equal(t, "every", FailingField(data, &params{}), "the custom decoder's error named no field")
	require.Empty(t, FailingField([]byte(`{"name":"a"}`), &params{}))
	require.Empty(t, FailingField([]byte(`[1]`), &params{}), "not an object")
}

func TestTypeName(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]string{"": "a string", 1: "an integer", 1.5: "a number", true: "a boolean", new(int): "an integer"} {
		require.Equal(t, want, TypeName(reflect.TypeOf(v)))
	}
	require.Equal(t, "a list", TypeName(reflect.TypeOf([]int{})))
	require.Equal(t, "an object", TypeName(reflect.TypeOf(map[string]int{})))
	require.Equal(t, "a value", TypeName(nil))
}
