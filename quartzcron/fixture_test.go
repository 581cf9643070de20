package quartzcron

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// fixture is testdata/quartz_fixture.json, written by
// testdata/gen/QuartzFixture.java from real Quartz.
type fixture struct {
	Quartz  string `json:"quartz"`
	Java    string `json:"java"`
	MaxYear int    `json:"max_year"`
	Fires   int    `json:"fires"`
	Cases   []struct {
		Expr  string  `json:"expr"`
		Zone  string  `json:"zone"`
		From  int64   `json:"from"`
		Hangs bool    `json:"hangs"`
		Fires []int64 `json:"fires"`
	} `json:"cases"`
	Invalid []struct {
		Expr  string `json:"expr"`
		Error string `json:"error"`
	} `json:"invalid"`
}

func loadFixture(t testing.TB) *fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/quartz_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

func ms(v int64) string { return time.UnixMilli(v).UTC().Format(time.RFC3339) }

// Every fire time real Quartz computed, from every start, in every zone.
func TestFixtureFireTimes(t *testing.T) {
	f := loadFixture(t)
	if f.MaxYear != MaxYear {
		t.Fatalf("fixture made with Quartz's MAX_YEAR %d, package has %d", f.MaxYear, MaxYear)
	}
	fires := 0
	for _, c := range f.Cases {
		name := fmt.Sprintf("%q in %s from %s", c.Expr, c.Zone, ms(c.From))
		loc, err := time.LoadLocation(c.Zone)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Parse(c.Expr, loc)
		if c.Hangs {
			// Quartz loops for ever on these; chime refuses them.
			if err == nil {
				t.Errorf("%s: Quartz hangs on it, Parse should refuse it", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		at := time.UnixMilli(c.From)
		for i, want := range c.Fires {
			got := e.Next(at)
			if got.IsZero() || got.UnixMilli() != want {
				t.Errorf("%s: fire %d = %s, Quartz %s", name, i+1, fmtTime(got), ms(want))
				break
			}
			fires++
			at = got
		}
		if len(c.Fires) < f.Fires && !at.IsZero() {
			if got := e.Next(at); !got.IsZero() {
				t.Errorf("%s: fire %d = %s, Quartz none", name, len(c.Fires)+1, fmtTime(got))
			}
		}
	}
	t.Logf("%d chains, %d fire times", len(f.Cases), fires)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

// Every expression Quartz refuses is refused, with Quartz's message.
func TestFixtureErrors(t *testing.T) {
	f := loadFixture(t)
	for _, c := range f.Invalid {
		_, err := Parse(c.Expr, time.UTC)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: err = %v, Quartz: %s", c.Expr, err, c.Error)
			continue
		}
		if pe.Msg != c.Error {
			t.Errorf("%q:\n got   %s\n Quartz %s", c.Expr, pe.Msg, c.Error)
		}
	}
}
