package trigger

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func standardErr(expr string) error {
	_, err := New(&models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: &expr, CronSyntax: models.SyntaxStandard}, nil)
	return err
}

// What only Quartz syntax means is refused under the standard syntax,
// with the way to say it is Quartz: robfig reads "?" as "*", so
// "0 0 12 ? * 1" fired on Mondays where Quartz means Sundays.
func TestStandardRefusesQuartz(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr string
		want []string
	}{
		{"0 0 12 ? * 1", []string{`"?" in day-of-month is Quartz syntax`, "Quartz counts day-of-week 1-7 from Sunday", `write * for "?"`}},
		{"0 12 ? * 1", []string{`"?" in day-of-month is Quartz syntax`, "1 is Monday"}},
		{"0 0 12 * * ?", []string{`"?" in day-of-week is Quartz syntax`}},
		{"0 0 12 ? * MON", []string{`"?" in day-of-month`}},
		{"0 15 10 ? * 6L", []string{`"6L" in day-of-week is Quartz syntax`, "no L, W or #"}},
		{"0 15 10 * * 6L", []string{`"6L" in day-of-week is Quartz syntax`}},
		{"0 15 10 * * fril", []string{`"fril" in day-of-week`}},
		{"0 15 10 * * 6#3", []string{`"6#3" in day-of-week`}},
		{"0 0 9 LW * *", []string{`"LW" in day-of-month`}},
		{"0 0 9 L-3 * *", []string{`"L-3" in day-of-month`}},
		{"0 0 9 15W * *", []string{`"15W" in day-of-month`}},
		{"0 9 L * *", []string{`"L" in day-of-month`}},
		{"0 0 12 ? * 1 2026", []string{"7 fields (a year last) is Quartz syntax", "5 fields, or 6 with seconds first"}},
		{"0 0 12 1 1 * 2026", []string{"7 fields"}},
	} {
		err := standardErr(c.expr)
		require.Error(t, err, c.expr)
		var q *QuartzSyntaxError
		require.True(t, errors.As(err, &q), "%s: %v", c.expr, err)
		msg := err.Error()
		require.Contains(t, msg, `bad cron_expr "`+c.expr+`"`)
		require.Contains(t, msg, "set cron_syntax to quartz (--cron-syntax quartz)", c.expr)
		for _, w := range c.want {
			require.Contains(t, msg, w, c.expr)
		}
		require.NotContains(t, msg, "strconv", c.expr)
	}
	// The day-of-week note only where there are day-of-week numbers.
	require.NotContains(t, standardErr("0 0 12 ? * MON").Error(), "from Sunday")
	require.Contains(t, standardErr("0 0 12 ? * */2").Error(), "from Sunday")
}

// Standard expressions whose text merely contains the letters L and W
// (month and day names) are read as before.
func TestStandardKeepsNames(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"0 0 1 JUL *", "0 0 * * WED", "0 0 * jul,apr wed-fri", "0 0 * * 1", "0 0 * * 0-6", "0 0 0 * * 1",
		"*/5 * * * *", "@daily", "@every 5m"} {
		require.NoError(t, standardErr(expr), expr)
	}
}

// The standard parser's refusals name the field and never show Go's
// strconv errors.
func TestStandardErrorsAreReadable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, want string }{
		{"x * * * *", `minute field "x": "x" is not a number`},
		{"0 0 * * mo", `day-of-week field "mo": "mo" is not a number or a day name (SUN-SAT)`},
		{"0 0 1 janv *", `month field "janv": "janv" is not a number or a month name (JAN-DEC)`},
		{"5- * * * *", `minute field "5-": "5-" has an empty part`},
		// robfig took these as lists of no values, and Next then walked
		// five years second by second (FuzzPlan hung on the first).
		{", * * * * *", `second field ",": a list with no values`},
		{"0 ,, * * *", `hour field ",,": a list with no values`},
		{"61 * * * *", `minute field "61": end of range (61) above maximum (59)`},
		{"0 0 0 * * *x", `day-of-week field "*x"`},
		{"60 0 0 * * *", `second field "60"`}, // six fields: seconds first
		{"0 0 * * 7", "standard syntax counts day-of-week 0-6 from Sunday: write 0 or SUN for Sunday"},
		{"0 0 * * 1-7", "write 0 or SUN for Sunday"},
		{"* * *", "3 fields: standard syntax has 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first"},
		{"1 2 3 4 5 6 7 8", "8 fields"},
		{"@fortnightly", "unrecognized descriptor"},
	} {
		err := standardErr(c.expr)
		require.Error(t, err, c.expr)
		require.Contains(t, err.Error(), c.want, c.expr)
		require.NotContains(t, err.Error(), "strconv", c.expr)
		var q *QuartzSyntaxError
		require.False(t, errors.As(err, &q), "%s is not taken for Quartz: %v", c.expr, err)
	}
}

// FuzzStandard: whatever the text, the standard syntax answers a trigger
// or an error without Go's internals, and refuses every "?".
func FuzzStandard(f *testing.F) {
	for _, s := range []string{"0 0 12 ? * 1", "0 15 10 ? * 6L", "x * * * *", "5- * * * *", "0 0 * * 1-7", "@daily", "*/5 * * * *", "0 0 9 L-3 * * 2026"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		err := standardErr(expr)
		if err == nil {
			require.NotContains(t, expr, "?")
			return
		}
		require.NotContains(t, err.Error(), "strconv")
		require.NotContains(t, err.Error(), "Atoi")
		if strings.Contains(expr, "?") && !strings.HasPrefix(strings.TrimSpace(expr), "@") {
			var q *QuartzSyntaxError
			if n := len(strings.Fields(expr)); n >= 5 && n <= 7 && !strings.HasPrefix(strings.TrimSpace(expr), "TZ=") && !strings.HasPrefix(strings.TrimSpace(expr), "CRON_TZ=") {
				require.True(t, errors.As(err, &q), "%q: %v", expr, err)
			}
		}
	})
}
