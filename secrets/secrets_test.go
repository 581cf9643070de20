package secrets

import (
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), KeySize)))
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	kr, err := NewKeyring(key('a'), nil)
	require.NoError(t, err)
	value := "line one\nline two\x00after a NUL\r\n\xff"
	s, err := kr.Seal("erp", []byte(value))
	require.NoError(t, err)
	require.NotContains(t, s.Ciphertext, "line")
	require.Equal(t, kr.CurrentID(), s.KeyID)
	got, err := kr.Open("erp", s)
	require.NoError(t, err)
	require.Equal(t, value, string(got))

	// Another nonce each time: the same value seals differently.
	s2, err := kr.Seal("erp", []byte(value))
	require.NoError(t, err)
	require.NotEqual(t, s.Ciphertext, s2.Ciphertext)
	require.NotEqual(t, s.Nonce, s2.Nonce)

	// The name is associated data: a row copied to another name does not open.
	_, err = kr.Open("hr", s)
	require.ErrorContains(t, err, "does not decrypt")
	require.NotContains(t, err.Error(), "line")
}

func TestNoKey(t *testing.T) {
	t.Parallel()
	var none *Keyring
	_, err := none.Seal("x", []byte("v"))
	require.ErrorIs(t, err, ErrNoKey)
	kr, err := LoadKeyring("", "", "")
	require.NoError(t, err)
	require.False(t, kr.Configured())
	_, err = kr.Seal("x", []byte("v"))
	require.ErrorIs(t, err, ErrNoKey)
	_, err = kr.Open("x", Sealed{KeyID: "k"})
	require.ErrorIs(t, err, ErrNoKey)
	require.Contains(t, ErrNoKey.Error(), "CHIME_SECRETS_KEY")
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k, err := ParseKey("2026-11:" + key('b'))
	require.NoError(t, err)
	require.Equal(t, "2026-11", k.ID)
	k2, err := ParseKey(key('b'))
	require.NoError(t, err)
	require.Len(t, k2.ID, 16, "derived id: 8 bytes of SHA-256 in hex")
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!")), "bad id!:" + key('b')} {
		_, err := ParseKey(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), key('b'))
	}
	_, err = NewKeyring("k:"+key('a'), []string{"k:" + key('b')})
	require.ErrorContains(t, err, "two different keys")
	_, err = NewKeyring("", []string{key('b')})
	require.ErrorContains(t, err, "no current key")
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	f := t.TempDir() + "/keys"
	require.NoError(t, writeFile(f, "# current first\nnew:"+key('n')+"\n\nold:"+key('o')+"\n"))
	kr, err := LoadKeyring("", "", f)
	require.NoError(t, err)
	require.Equal(t, "new", kr.CurrentID())
	old, err := NewKeyring("old:"+key('o'), nil)
	require.NoError(t, err)
	s, err := old.Seal("n", []byte("v"))
	require.NoError(t, err)
	v, err := kr.Open("n", s)
	require.NoError(t, err, "an old key still opens")
	require.Equal(t, "v", string(v))
	_, err = LoadKeyring(key('a'), "", f)
	require.ErrorContains(t, err, "not both")
	newOnly, err := NewKeyring("new:"+key('n'), nil)
	require.NoError(t, err)
	_, err = newOnly.Open("n", s)
	require.True(t, errors.Is(err, ErrUnknownKey), "%v", err)
}

func TestRefs(t *testing.T) {
	t.Parallel()
	params := []byte(`{"command":"run","env":{"PW":{"$secret":"erp/pw"},"N":"1"},"list":[1.50,{"$secret":"a"}],"n":12345678901234567890}`)
	names, err := Refs(params)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "erp/pw"}, names)
	ph, err := WithPlaceholders(params)
	require.NoError(t, err)
	require.Contains(t, string(ph), `"PW":"(secret)"`)
	out, values, err := Resolve(params, func(n string) (string, error) { return "v<" + n + ">\n\x00", nil })
	require.NoError(t, err)
	require.Contains(t, string(out), `"PW":"v<erp/pw>\n\u0000"`)
	require.Contains(t, string(out), `1.50`, "numbers keep their text")
	require.Contains(t, string(out), `12345678901234567890`)
	require.Len(t, values, 2)
	_, _, err = Resolve(params, func(n string) (string, error) { return "", errors.New("no such secret " + n) })
	require.ErrorContains(t, err, "no such secret")
	escaped, values, err := Resolve([]byte(`{"x":{"\u0024secret":"a"},"y":"\u00e9"}`), func(string) (string, error) { return "v", nil })
	require.NoError(t, err)
	require.JSONEq(t, `{"x":"v","y":"é"}`, string(escaped), "an escaped key is a reference too")
	require.Equal(t, []string{"v"}, values)
	plain := []byte(`{"a":"b"}`)
	same, values, err := Resolve(plain, nil)
	require.NoError(t, err)
	require.Equal(t, plain, same)
	require.Nil(t, values)
	for _, bad := range []string{`{"x":{"$secret":5}}`, `{"x":{"$secret":"a","y":1}}`, `{"x":{"$secret":"a b"}}`} {
		_, err := Refs([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestMasker(t *testing.T) {
	t.Parallel()
	m := NewMasker([]string{"hunter2-long", "first line\nsecond line\x00third", "abc"})
	require.Equal(t, "pw=********.", m.Mask("pw=hunter2-long."))
	require.Equal(t, "********", m.Mask("second line"))
	require.Equal(t, `"********"`, m.Mask(`"first line\nsecond line\u0000third"`))
	require.Equal(t, "abc stays: too short to mask", m.Mask("abc stays: too short to mask"))
	var none *Masker
	require.Equal(t, "x", none.Mask("x"))
	require.Nil(t, NewMasker([]string{"ab", ""}))
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
