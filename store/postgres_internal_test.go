package store

import "testing"

// rebind numbers chime's '?' placeholders for PostgreSQL and leaves a '?'
// that is text (a literal, a quoted name, a dollar-quoted body, a comment)
// alone.
func TestRebind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT 1":                                "SELECT 1",
		"a = ? AND b IN (?,?)":                    "a = $1 AND b IN ($2,$3)",
		"x = '?' AND y = ?":                       "x = '?' AND y = $1",
		"x = 'it''s ?' AND y = ?":                 "x = 'it''s ?' AND y = $1",
		`"odd?name" = ?`:                          `"odd?name" = $1`,
		"$$ ? $$ || ?":                            "$$ ? $$ || $1",
		"$tag$ ? $tag$ ?":                         "$tag$ ? $tag$ $1",
		"-- what?\nx = ?":                         "-- what?\nx = $1",
		"/* ? */ x = ?":                           "/* ? */ x = $1",
		"already = $1":                            "already = $1",
		"unterminated '?":                         "unterminated '?",
		"CAST(? AS BIGINT) * INTERVAL '1 second'": "CAST($1 AS BIGINT) * INTERVAL '1 second'",
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
