package quartzcron

import (
	"testing"
	"time"
)

// FuzzParse: whatever the input, Parse returns (never panics), and an
// accepted expression yields fire times that strictly increase, are whole
// seconds and come back in bounded time (maxSteps).
func FuzzParse(f *testing.F) {
	fx := loadFixture(f)
	seen := map[string]bool{}
	for _, c := range fx.Cases {
		if !seen[c.Expr] {
			seen[c.Expr] = true
			f.Add(c.Expr, c.From/1000, uint8(len(c.Zone)))
		}
	}
	for _, c := range fx.Invalid {
		f.Add(c.Expr, int64(1767225600), uint8(0))
	}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "Pacific/Chatham", "America/Santiago"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		l, err := time.LoadLocation(z)
		if err != nil {
			f.Fatal(err)
		}
		locs[i] = l
	}
	f.Fuzz(func(t *testing.T, expr string, from int64, zone uint8) {
		if len(expr) > 255 {
			return // the API refuses longer cron_expr values
		}
		e, err := Parse(expr, locs[int(zone)%len(locs)])
		if err != nil {
			if _, ok := err.(*ParseError); !ok || err.Error() == "" {
				t.Fatalf("Parse(%q): %T %v", expr, err, err)
			}
			return
		}
		// Between 1970 and MaxYear, where the fire times live.
		at := time.Unix(from%(4_000_000_000)+int64(zone)*86400, 0)
		if at.Year() < 1970 {
			at = at.AddDate(200, 0, 0)
		}
		for i := 0; i < 5; i++ {
			next := e.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) {
				t.Fatalf("%q: Next(%s) = %s, not after it", expr, at, next)
			}
			if next.Nanosecond() != 0 {
				t.Fatalf("%q: Next(%s) = %s, not a whole second", expr, at, next)
			}
			at = next
		}
	})
}
