package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
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

type inner struct {
	Command string `json:"command"`
}

type outer struct {
	Name   string            `json:"name"`
	Inner  inner             `json:"inner"`
	List   []inner           `json:"list"`
	ByName map[string]inner  `json:"by_name"`
	Raw    json.RawMessage   `json:"raw"`
	Any    map[string]any    `json:"any"`
	Ptr    *inner            `json:"ptr"`
	Tags   map[string]string `json:"tags"`
	NoTag  int
	Embedded
}

type Embedded struct {
	Extra string `json:"extra"`
}

// TestDecodeRefusesAmbiguousKeys: encoding/json keeps the last of two equal
// keys and matches field names case-insensitively, so {"name":"a","Name":"b"}
// or {"command":"ls","command":"rm -rf ~"} mean one thing to chime and maybe
// another to a proxy, a linter or the admin reading it. Both are refused,
// at any depth, with the key named.
func TestDecodeRefusesAmbiguousKeys(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"name":"a","name":"b"}`:                         `duplicate key "name"`,
		`{"Name":"a"}`:                                    `key "Name" differs only in case from field "name"`,
		`{"NAME":"a"}`:                                    `"NAME"`,
		`{"inner":{"Command":"x"}}`:                       `key "inner.Command" differs only in case from field "command"`,
		`{"inner":{"command":"x","command":"y"}}`:         `duplicate key "inner.command"`,
		`{"list":[{"command":"x"},{"COMMAND":"y"}]}`:      `"list[1].COMMAND"`,
		`{"by_name":{"a":{"Command":"x"}}}`:               `"by_name.a.Command"`,
		`{"by_name":{"a":{},"a":{}}}`:                     `duplicate key "by_name.a"`,
		`{"raw":{"x":1,"x":2}}`:                           `duplicate key "raw.x"`,
		`{"any":{"k":[{"z":1,"z":2}]}}`:                   `duplicate key "any.k[0].z"`,
		`{"ptr":{"commanD":"x"}}`:                         `"ptr.commanD"`,
		`{"notag":1}`:                                     `key "notag" differs only in case from field "NoTag"`,
		`{"EXTRA":"x"}`:                                   `"EXTRA"`,
		`{"tags":{"a":"1","A":"2"}}`:                      "", // map keys are data: both stay
		`{"any":{"a":1,"A":2}}`:                           "",
		`{"name":"a","inner":{"command":"x"},"NoTag":1}`:  "",
		`{"extra":"x","list":[{"command":"a"}],"raw":[]}`: "",
	} {
		var v outer
		err := Decode([]byte(body), &v)
		if want == "" {
			require.NoError(t, err, body)
			continue
		}
		require.Error(t, err, body)
		require.ErrorContains(t, err, want, body)
		var ke *KeyError
		require.ErrorAs(t, err, &ke, body)
	}
	// Into a map the same holds for duplicates; case is data there.
	var m map[string]any
	require.ErrorContains(t, Decode([]byte(`{"a":1,"a":2}`), &m), `duplicate key "a"`)
	require.NoError(t, Decode([]byte(`{"a":1,"A":2}`), &m))
	deep := strings.Repeat(`{"a":`, 1100) + "1" + strings.Repeat("}", 1100)
	require.ErrorIs(t, Decode([]byte(deep), &m), ErrTooDeep)
	// Escaped spellings of one key are the same key.
	require.ErrorContains(t, Decode([]byte(`{"name":"a","n\u0061me":"b"}`), &outer{}), `duplicate key "name"`)
}

// FuzzDecode: any input either decodes or is an error; never a panic or a
// hang, and what decodes has no duplicate keys at any depth.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","inner":{"command":"x"},"list":[{"command":"y"}],"by_name":{"k":{}},"raw":{"a":[1,{"b":null}]},"NoTag":3}`,
		`{"name":"a","name":"b"}`, `{"Name":1}`, `{"raw":{"x":1,"x":2}}`, `{"any":{"a":{"a":{"a":[[[{}]]]}}}}`,
		`{"extra":"\u00e9","tags":{"":""}}`, `[]`, `null`, `{`, `{"name":"a"} {}`, `{"ptr":null}`, `"x"`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v outer
		err := Decode(data, &v)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		var m any
		require.NoError(t, Decode(data, &m), "what decodes into a struct decodes into any")
	})
}
