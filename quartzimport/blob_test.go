package quartzimport

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chimesched/chime/internal/javaser"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// expectations is testdata/blobs/expect.json: what Quartz 2.3.2 itself
// said about each blob (testdata/blobs/gen/QuartzBlobs.java).
type expectations struct {
	JVMZone   string  `json:"jvm_zone"`
	Probes    []int64 `json:"probes"`
	Calendars []struct {
		File        string     `json:"file"`
		Class       string     `json:"class"`
		Timezone    string     `json:"timezone"`
		Description string     `json:"description"`
		Included    string     `json:"included"`
		Next        [][2]int64 `json:"next"`
	} `json:"calendars"`
	JobData []struct {
		File   string          `json:"file"`
		JSON   json.RawMessage `json:"json"`
		SameAs string          `json:"same_as"`
		Error  string          `json:"error"`
	} `json:"jobdata"`
}

func loadExpectations(t *testing.T) *expectations {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "blobs", "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expectations
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

func blob(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "blobs", file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// level is one calendar of a chain, parsed by chime as the schedule
// engine would.
type level struct {
	q   *QuartzCalendar
	cal *trigger.Calendar
}

// chain parses c and its bases with trigger.ParseCalendar, giving a
// zone-less calendar the zone its Quartz JVM ran in, as the importer
// would when told it.
func chain(t *testing.T, c *QuartzCalendar, jvmZone string) []level {
	t.Helper()
	var out []level
	for ; c != nil; c = c.Base {
		tz := c.Timezone
		if tz == "" {
			tz = jvmZone
		}
		cal, err := trigger.ParseCalendar(&models.Calendar{Kind: c.Kind, Definition: models.JSON(c.Definition), Timezone: tz})
		if err != nil {
			t.Fatalf("%s: chime refuses the definition %s: %v", c.Class, c.Definition, err)
		}
		out = append(out, level{c, cal})
	}
	return out
}

// quartzOnlyExcludes reports an instant Quartz excludes on purpose where
// chime, as docs/quartz.md says, does not: a non-inverted DailyCalendar's
// first and last millisecond of the day.
func quartzOnlyExcludes(ls []level, t time.Time) bool {
	for _, l := range ls {
		if l.q.Kind != models.CalendarDaily || strings.Contains(string(l.q.Definition), `"invert":true`) {
			continue
		}
		loc, _ := time.LoadLocation(l.q.Timezone)
		if l.q.Timezone == "" {
			loc, _ = time.LoadLocation("Asia/Kolkata")
		}
		h, m, s := t.In(loc).Clock()
		ms := t.Nanosecond() / 1e6
		if (h == 0 && m == 0 && s == 0 && ms == 0) || (h == 23 && m == 59 && s == 59 && ms == 999) {
			return true
		}
	}
	return false
}

// TestCalendarsAgainstQuartz decodes every calendar Quartz wrote and asks
// chime's own calendar code, at thousands of instants (around
// daylight-saving changes and leap days included), what Quartz's
// isTimeIncluded answered there.
func TestCalendarsAgainstQuartz(t *testing.T) {
	e := loadExpectations(t)
	if len(e.Calendars) < 15 || len(e.Probes) < 5000 {
		t.Fatalf("expect.json has %d calendars, %d probes", len(e.Calendars), len(e.Probes))
	}
	for _, want := range e.Calendars {
		t.Run(want.File, func(t *testing.T) {
			c, err := DecodeCalendar(blob(t, want.File))
			if want.Class == classBase {
				if err == nil || !strings.Contains(err.Error(), classBase) {
					t.Fatalf("a plain BaseCalendar: %v, want an error naming it", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Class != want.Class || c.Description != want.Description {
				t.Errorf("class %q, description %q; want %q, %q", c.Class, c.Description, want.Class, want.Description)
			}
			// A zone-less CronCalendar reports the JVM's zone once asked;
			// Java's own IDs become IANA names.
			wantTZ := map[string]string{"PST": "America/Los_Angeles", "GMT-03:00": "Etc/GMT+3"}[want.Timezone]
			if wantTZ == "" {
				wantTZ = want.Timezone
			}
			if c.Timezone != wantTZ && (c.Timezone != "" || want.Timezone != e.JVMZone) {
				t.Errorf("timezone %q, want %q", c.Timezone, want.Timezone)
			}
			ls := chain(t, c, e.JVMZone)
			mismatches := 0
			for i, ms := range e.Probes {
				at := time.UnixMilli(ms)
				excluded := false
				for _, l := range ls {
					excluded = excluded || l.cal.Excludes(at)
				}
				javaIncluded := want.Included[i] == '1'
				if excluded == !javaIncluded || (!javaIncluded && quartzOnlyExcludes(ls, at)) || knownDifference(want.File, at, false) {
					continue
				}
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s (%d): chime excludes %v, Quartz includes %v", at.UTC().Format(time.RFC3339Nano), ms, excluded, javaIncluded)
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d probes differ; definition %s in %q", mismatches, len(e.Probes), c.Definition, c.Timezone)
			}
			checkNext(t, want.File, ls, want.Next)
		})
	}
}

// checkNext compares chime's NextIncluded from an excluded instant with
// Quartz's getNextIncludedTime, where the two mean the same: a single
// day-based or daily calendar (Quartz's answer is in milliseconds, chime's
// the first nanosecond included).
//
// A daily range with milliseconds is whole seconds in chime: there the
// answers are compared to the second.
func checkNext(t *testing.T, file string, ls []level, next [][2]int64) {
	if len(ls) != 1 || ls[0].q.Kind == models.CalendarCron {
		return
	}
	unit := time.Millisecond
	for _, n := range ls[0].q.Notes {
		if strings.Contains(n, "has milliseconds") {
			unit = time.Second
		}
	}
	for _, p := range next {
		from := time.UnixMilli(p[0])
		got := ls[0].cal.NextIncluded(from)
		if quartzOnlyExcludes(ls, time.UnixMilli(p[1]-1)) || quartzOnlyExcludes(ls, from) || knownDifference(file, from, true) {
			continue
		}
		java := time.UnixMilli(p[1])
		if !ceil(got, unit).Equal(ceil(java, unit)) {
			t.Errorf("next included after %s: chime %s, Quartz %s", from.UTC().Format(time.RFC3339Nano),
				got.UTC().Format(time.RFC3339Nano), time.UnixMilli(p[1]).UTC().Format(time.RFC3339Nano))
		}
	}
}

func ceil(t time.Time, unit time.Duration) time.Time {
	return t.Add(unit - 1).Truncate(unit)
}

// knownDifferences are where chime's calendar evaluation (package trigger)
// and Quartz's differ for a reason outside the decoding, each with it.
var knownDifferences = map[string][]struct {
	from, to time.Time
	nextOnly bool // in getNextIncludedTime only
	why      string
}{
	"cal_holiday_havana.bin": {{
		time.Date(2026, 3, 8, 4, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 4, 0, 0, 0, time.UTC), true,
		"Havana's spring-forward skips midnight on 8 March; Quartz's getNextIncludedTime starts its " +
			"day-by-day walk at that day's first instant, 01:00, and keeps the 01:00, answering " +
			"01:00 of 10 March; chime answers its midnight. isTimeIncluded, which decides fires, agrees",
	}},
}

func knownDifference(file string, t time.Time, next bool) bool {
	for _, d := range knownDifferences[file] {
		if (next || !d.nextOnly) && !t.Before(d.from) && !t.After(d.to) {
			return true
		}
	}
	return false
}

// TestCalendarShapes pins the decoded definitions themselves, so a change
// shows in words, not only as probe mismatches.
func TestCalendarShapes(t *testing.T) {
	cases := map[string]struct {
		kind models.CalendarKind
		def  string
		tz   string
	}{
		"cal_holiday_berlin.bin":          {models.CalendarHoliday, `{"dates":["2026-03-29","2026-10-25","2026-12-25","2027-01-01","2028-02-29"]}`, "Europe/Berlin"},
		"cal_holiday_new_york.bin":        {models.CalendarHoliday, `{"dates":["2026-03-08","2026-07-04","2026-11-01"]}`, "America/New_York"},
		"cal_holiday_nozone.bin":          {models.CalendarHoliday, `{"dates":["2026-01-26","2026-08-15"]}`, ""},
		"cal_annual_sydney.bin":           {models.CalendarAnnual, `{"days":["01-26","02-29","10-05","12-25"]}`, "Australia/Sydney"},
		"cal_monthly_new_york.bin":        {models.CalendarMonthly, `{"days":[1,15,29,30,31]}`, "America/New_York"},
		"cal_weekly_default.bin":          {models.CalendarWeekly, `{"days":["sun","sat"]}`, ""},
		"cal_weekly_sydney.bin":           {models.CalendarWeekly, `{"days":["mon","fri"]}`, "Australia/Sydney"},
		"cal_daily_inverted_new_york.bin": {models.CalendarDaily, `{"from":"09:00:00","invert":true,"to":"17:00:00"}`, "America/New_York"},
		"cal_daily_millis_berlin.bin":     {models.CalendarDaily, `{"from":"01:30:01","invert":false,"to":"02:30:00"}`, "Europe/Berlin"},
		"cal_cron_berlin.bin":             {models.CalendarCron, `{"expression":"* * 0-7 ? * MON-FRI"}`, "Europe/Berlin"},
		"cal_holiday_havana.bin":          {models.CalendarHoliday, `{"dates":["2026-03-08","2026-03-09"]}`, "America/Havana"},
		"cal_holiday_zone_set_late.bin":   {models.CalendarHoliday, `{"dates":["2026-10-03"]}`, "Europe/Berlin"},
		"cal_monthly_gmt_minus_3.bin":     {models.CalendarMonthly, `{"days":[2]}`, "Etc/GMT+3"},
		"cal_weekly_pst.bin":              {models.CalendarWeekly, `{"days":["wed"]}`, "America/Los_Angeles"},
	}
	for file, want := range cases {
		c, err := DecodeCalendar(blob(t, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if c.Kind != want.kind || string(c.Definition) != want.def || c.Timezone != want.tz {
			t.Errorf("%s: %s %s %q; want %s %s %q", file, c.Kind, c.Definition, c.Timezone, want.kind, want.def, want.tz)
		}
	}
	c, err := DecodeCalendar(blob(t, "cal_cron_base_chain.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []models.CalendarKind
	for b := c; b != nil; b = b.Base {
		kinds = append(kinds, b.Kind)
	}
	if !reflect.DeepEqual(kinds, []models.CalendarKind{models.CalendarCron, models.CalendarMonthly, models.CalendarHoliday}) {
		t.Errorf("base chain %v", kinds)
	}
	c, _ = DecodeCalendar(blob(t, "cal_holiday_zone_set_late.bin"))
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "2026-10-01T20:30:00+02:00 is not a midnight") {
		t.Errorf("notes %q: want the date Quartz never matched", c.Notes)
	}
	c, _ = DecodeCalendar(blob(t, "cal_daily_millis_berlin.bin"))
	if len(c.Notes) != 2 || !strings.Contains(c.Notes[0], "01:30:00.500-02:30:00.250") {
		t.Errorf("notes %q: want the milliseconds and the first and last millisecond", c.Notes)
	}
}

// TestJobDataAgainstQuartz compares each decoded map with the values the
// Java generator put in it, the Properties form with the serialized one.
func TestJobDataAgainstQuartz(t *testing.T) {
	e := loadExpectations(t)
	for _, want := range e.JobData {
		t.Run(want.File, func(t *testing.T) {
			got, err := DecodeJobDataMap(blob(t, want.File))
			if want.Error != "" {
				if err == nil || !strings.Contains(err.Error(), want.Error) {
					t.Fatalf("got %v, want an error naming %s", err, want.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expect := want.JSON
			if want.SameAs != "" {
				m, err := DecodeJobDataMap(blob(t, want.SameAs))
				if err != nil {
					t.Fatal(err)
				}
				if expect, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			gotJSON, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("the map is no JSON: %v", err)
			}
			if a, b := canonical(t, gotJSON), canonical(t, expect); !reflect.DeepEqual(a, b) {
				t.Errorf("got  %s\nwant %s", trim(gotJSON), trim(expect))
			}
		})
	}
}

func canonical(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v in %s", err, trim(b))
	}
	return v
}

func trim(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "..."
	}
	return string(b)
}

// TestJobDataTypes pins the Go types the importer gets.
func TestJobDataTypes(t *testing.T) {
	m, err := DecodeJobDataMap(blob(t, "jobdata_typed.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"count": int64(42), "big": int64(9007199254740993), "flag": true, "ratio": 0.25, "single": 1.1,
		"short": int64(12), "byte": int64(-3), "char": "x", "nothing": nil, "unit": "SECONDS",
		"when": time.UnixMilli(1767225600123).UTC(), "decimal": json.Number("-12345678901234567890.125"),
		"integer": json.Number("123456789012345678901234567890"),
	}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v (%T), want %#v (%T)", k, m[k], m[k], v, v)
		}
	}
	for _, empty := range [][]byte{nil, {}} {
		if m, err := DecodeJobDataMap(empty); err != nil || m == nil || len(m) != 0 {
			t.Errorf("empty blob: %v, %v", m, err)
		}
	}
}

func TestProperties(t *testing.T) {
	text := "# comment\n! also\n  \nplain=1\nspaced   :  two  \ncont = a\\\n    b\\\\\nkey\\ x y\n\\u0041B=\\t\\u00e9\n\xe9=latin1\r\nlast\\"
	m, err := DecodeJobDataMap([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"plain": "1", "spaced": "two  ", "cont": `ab\`, "key x": "y", "AB": "\té", "é": "latin1", "last": ""}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %#v\nwant %#v", m, want)
	}
	if _, err := DecodeJobDataMap([]byte("k=\\u12G4")); err == nil || !strings.Contains(err.Error(), `malformed \uxxxx`) {
		t.Errorf("bad escape: %v", err)
	}
}

// TestHostileBlobs: truncated blobs, garbage, bombs and lies are errors,
// quickly (the whole test is a few milliseconds; a hang or a panic fails it).
func TestHostileBlobs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "blobs", "*.bin"))
	for _, f := range files {
		b := blob(t, filepath.Base(f))
		if !bytes.HasPrefix(b, []byte{0xAC, 0xED}) {
			continue
		}
		// From 2 bytes: a lone 0xAC is a one-character Properties text.
		step := max(1, len(b)/300)
		for n := 2; n < len(b); n += step {
			var err error
			if strings.HasPrefix(filepath.Base(f), "cal_") {
				_, err = DecodeCalendar(b[:n])
			} else {
				_, err = DecodeJobDataMap(b[:n])
			}
			if err == nil {
				t.Errorf("%s cut to %d of %d bytes: no error", f, n, len(b))
				break
			}
		}
	}
	garbage := [][]byte{
		nil, {0xAC}, {0xAC, 0xED}, {0xAC, 0xED, 0, 5}, []byte("not java at all"),
		{0xAC, 0xED, 0, 5, 0x74, 0, 1, 'x'}, // a string, not a calendar
		{0xAC, 0xED, 0, 5, 0x70},            // null
	}
	for _, g := range garbage {
		if _, err := DecodeCalendar(g); err == nil {
			t.Errorf("calendar %q: no error", g)
		}
	}
	for _, g := range garbage[1:] {
		if g[0] != 0xAC || len(g) < 2 {
			continue
		}
		if _, err := DecodeJobDataMap(g); err == nil {
			t.Errorf("job data %q: no error", g)
		}
	}
	// A nesting bomb: 100,000 object arrays inside each other.
	bomb := []byte{0xAC, 0xED, 0, 5, 0x75, 0x72, 0, 19}
	bomb = append(bomb, "[Ljava.lang.Object;"...)
	bomb = append(bomb, 0, 0, 0, 0, 0, 0, 0, 1, 0x02, 0, 0, 0x78, 0x70, 0, 0, 0, 1)
	for range 100_000 {
		bomb = append(bomb, 0x75, 0x71, 0, 0x7E, 0, 0, 0, 0, 0, 1)
	}
	if _, err := DecodeJobDataMap(bomb); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("nesting bomb: %v", err)
	}
	// A long array claiming two billion elements.
	huge := []byte{0xAC, 0xED, 0, 5, 0x75, 0x72, 0, 2, '[', 'J', 0, 0, 0, 0, 0, 0, 0, 1, 0x02, 0, 0, 0x78, 0x70, 0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3}
	if _, err := DecodeJobDataMap(huge); err == nil || !strings.Contains(err.Error(), "array claims") {
		t.Errorf("huge array: %v", err)
	}
}

// TestSharedReferencesCannotExplode: a list holding the same list twice,
// forty levels deep, is 2^40 values once converted (a stream can say it in
// a few hundred bytes with back-references); the conversion stops at its
// budget.
func TestSharedReferencesCannotExplode(t *testing.T) {
	class := &javaser.Class{Name: "java.util.ArrayList", Flags: javaser.FlagSerializable | javaser.FlagWriteMethod,
		Fields: []javaser.Field{{Name: "size", Type: 'I'}}}
	var v any = "x"
	for range 40 {
		v = &javaser.Object{Class: class, Data: []javaser.ClassData{{Class: class, Values: []any{int32(2)},
			Annotations: []any{javaser.BlockData{0, 0, 0, 2}, v, v}}}}
	}
	cv := &converter{limit: 20_000} // jobDataBudget's mechanism, at a test's size
	if _, err := cv.value(v); err == nil || !strings.Contains(err.Error(), "exceed 20000 bytes") {
		t.Errorf("got %v, want the conversion budget's error", err)
	}
	// A list that holds itself.
	self := &javaser.Object{Class: class}
	self.Data = []javaser.ClassData{{Class: class, Values: []any{int32(1)}, Annotations: []any{javaser.BlockData{0, 0, 0, 1}, self}}}
	if _, err := (&converter{limit: 1000}).value(self); err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Errorf("got %v, want a cycle error", err)
	}
}

// TestWrapperCycle: Collections$UnmodifiableList a wrapping b wrapping a
// (a stream can say it with back-references) is an error, not endless
// recursion.
func TestWrapperCycle(t *testing.T) {
	class := &javaser.Class{Name: "java.util.Collections$UnmodifiableList", Flags: javaser.FlagSerializable,
		Fields: []javaser.Field{{Name: "c", Type: 'L', ClassName: "Ljava/util/Collection;"}}}
	a := &javaser.Object{Class: class}
	b := &javaser.Object{Class: class, Data: []javaser.ClassData{{Class: class, Values: []any{a}}}}
	a.Data = []javaser.ClassData{{Class: class, Values: []any{b}}}
	if _, err := (&converter{limit: 1000}).value(a); err == nil || !strings.Contains(err.Error(), "more than 8 deep") {
		t.Errorf("got %v", err)
	}
}

func FuzzDecodeBlobs(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "blobs", "*.bin"))
	for _, file := range files {
		// Not the 76 KB map: the fuzzer minimizes each new find byte by
		// byte, which on such a seed stalls the run for minutes.
		if b := blob(f, filepath.Base(file)); len(b) <= 8<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := DecodeCalendar(data); err == nil {
			for ; c != nil; c = c.Base {
				if _, err := trigger.ParseCalendar(&models.Calendar{Kind: c.Kind, Definition: models.JSON(c.Definition), Timezone: c.Timezone}); err != nil {
					t.Fatalf("decoded calendar refused by chime: %v", err)
				}
			}
		}
		if m, err := DecodeJobDataMap(data); err == nil {
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("job data map is no JSON: %v", err)
			}
		}
	})
}
