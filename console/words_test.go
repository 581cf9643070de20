package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func TestCronWords(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]string{
		"*/5 * * * *":      "every 5 minutes",
		"* * * * *":        "every minute",
		"0 * * * *":        "every hour at minute 0",
		"30 2 * * *":       "every day at 02:30",
		"0 0 8 * * 1-5":    "every weekday (Monday to Friday) at 08:00",
		"0 9 * * 1,3":      "every Monday, Wednesday at 09:00",
		"0 6 1 * *":        "on day 1 of every month at 06:00",
		"@every 90s":       "every 90 seconds",
		"@daily":           "every day at 00:00",
		"15 10 * 1 *":      "cron 15 10 * 1 *",
		"5 0 8 * * *":      "cron 5 0 8 * * *",
		"TZ=UTC * * * * *": "cron TZ=UTC * * * * *",
	} {
		require.Equal(t, want, cronWords(expr), expr)
	}
}

// An interval out of models.IntervalBound (written by SQL on SQLite) is
// shown as the row holds it, not as a duration that wrapped negative.
func TestIntervalWordsOutOfRange(t *testing.T) {
	t.Parallel()
	v := 9223372037
	require.Equal(t, "every 9223372037 seconds (out of range)", specWords(&models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: &v}))
}
