package console

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestLocalPathRefusesWhatBrowsersReadAsAnotherHost is finding 5 of issue
// 22: "/\t/evil.example" passed the check, and a browser, which drops tab,
// CR and LF anywhere in a URL, read the Location "//evil.example".
func TestLocalPathRefusesWhatBrowsersReadAsAnotherHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// The reported bypass, and its kin.
		{"/\t/evil.example/typed", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\t\t\n/evil.example", "/"},
		{"\t//evil.example", "/"},
		{" //evil.example", "/"},
		{"\x00//evil.example", "/"},
		{"\x1f/\x01/evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\/evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"/\t\\evil.example", "/"},
		{"\\\t\\evil.example", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"https://evil.example/", "/"},
		{"HTTPS://evil.example/", "/"},
		{"http:/evil.example", "/"},
		{"\thttps://evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"java\tscript:alert(1)", "/"},
		{"evil.example", "/"},
		{"", "/"},
		{"/\x7f/evil.example", "/"},
		{"/a\x00b", "/"},
		{"/\xff", "/"},
		// Local paths stay as they are, cleaned the way a browser cleans them.
		{"/", "/"},
		{"/jobs", "/jobs"},
		{"/jobs?status=failed&since=1h", "/jobs?status=failed&since=1h"},
		{"/schedules/7#fires", "/schedules/7#fires"},
		{" /jobs ", "/jobs"},
		{"/jo\tbs", "/jobs"},
		{"/a\\b", "/a/b"},
		{"/jobs?q=a\\b", "/jobs?q=a\\b"},
		{"/%2F%2Fevil.example", "/%2F%2Fevil.example"},
		{"/%09/evil.example", "/%09/evil.example"},
		{"/javascript:alert(1)", "/javascript:alert(1)"},
	} {
		got := localPath(c.in)
		require.Equal(t, c.want, got, "%q", c.in)
		requireSameSite(t, c.in, got)
	}
}

// requireSameSite checks what a browser would make of out as a Location
// on https://chime.example/login.
func requireSameSite(t *testing.T, in, out string) {
	t.Helper()
	require.True(t, strings.HasPrefix(out, "/"), "%q -> %q", in, out)
	require.Equal(t, out, browserForm(out), "%q -> %q: a browser reads it otherwise", in, out)
	u, err := url.Parse(out)
	require.NoError(t, err, "%q -> %q", in, out)
	base, _ := url.Parse("https://chime.example/login")
	got := base.ResolveReference(u)
	require.Equal(t, "chime.example", got.Host, "%q -> %q", in, out)
	require.Equal(t, "https", got.Scheme, "%q -> %q", in, out)
	require.True(t, utf8.ValidString(out))
	require.Equal(t, -1, strings.IndexFunc(out, func(r rune) bool { return r < 0x20 || r == 0x7f }), "%q -> %q", in, out)
}

// browserForm is what the WHATWG URL parser does to a relative reference
// before it reads it: leading and trailing C0 controls and spaces go, tab
// and newlines go everywhere, and a backslash in the path is a slash.
func browserForm(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= 0x20 })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	end := strings.IndexAny(s, "?#")
	if end < 0 {
		end = len(s)
	}
	return strings.ReplaceAll(s[:end], `\`, "/") + s[end:]
}

func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/\t/evil.example", "/jobs?x=1", "\\\\x", " //x", "/a\\b?c\\d#e", "https://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := localPath(in)
		requireSameSite(t, in, out)
		require.Equal(t, out, localPath(out), "not idempotent on %q", in)
		if out != "/" {
			require.Equal(t, browserForm(in), out, "%q kept but changed otherwise", in)
		}
	})
}
