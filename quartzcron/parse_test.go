package quartzcron

import (
	"testing"
	"time"
)

// The examples, read as Quartz reads them: 1 is Sunday, 6L the last
// Friday, LW the last weekday, and the year field is accepted.
func TestQuartzReadings(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, berlin)
	for _, c := range []struct{ expr, want string }{
		{"0 0 0 ? * 1", "2026-01-04T00:00:00+01:00"},       // a Sunday
		{"0 15 10 ? * 6L", "2026-01-30T10:15:00+01:00"},    // the last Friday of January
		{"0 0 9 LW * ?", "2026-01-30T09:00:00+01:00"},      // Jan 31 is a Saturday
		{"0 0 0 29 2 ? 2028", "2028-02-29T00:00:00+01:00"}, // leap day, year field
		{"0 0 0 ? * 2#1", "2026-01-05T00:00:00+01:00"},     // first Monday
		{"0 0 0 1 1 ? 2020", ""},                           // a past year never fires
	} {
		e, err := Parse(c.expr, berlin)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		got := e.Next(from)
		if c.want == "" {
			if !got.IsZero() {
				t.Errorf("%q: %s, want none", c.expr, got)
			}
			continue
		}
		if got.Format(time.RFC3339) != c.want {
			t.Errorf("%q: %s, want %s", c.expr, got.Format(time.RFC3339), c.want)
		}
	}
}

// Expressions Quartz accepts but then loops on for ever, or fails on at
// the first computation, are refused at once.
func TestRefusedWhereQuartzHangs(t *testing.T) {
	for _, expr := range []string{"0 0 0 0W * ?", "0 0 0 L-28W * ?", "0 0 0 L-30W 2 ?", "L 0 0 ? * 1", "0 0 0 \n * ?"} {
		if _, err := Parse(expr, nil); err == nil {
			t.Errorf("%q accepted", expr)
		}
	}
	if _, err := Parse("0 0 0 L-27W * ?", nil); err != nil {
		t.Errorf("L-27W: %v", err)
	}
}

// Next is strictly after its argument even within a second, and a
// sub-second start finds the fire at the next whole second.
func TestNextSubSecond(t *testing.T) {
	e, err := Parse("* * * ? * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 500_000_000, time.UTC)
	if got := e.Next(at); !got.Equal(time.Date(2026, 5, 1, 12, 0, 1, 0, time.UTC)) {
		t.Fatalf("Next(%s) = %s", at, got)
	}
}
