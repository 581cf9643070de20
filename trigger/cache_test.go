package trigger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func cronRow(expr, tz string) *models.Schedule {
	return &models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: tz}
}

// A Cache shares a trigger only between rows that fire at the same times:
// the same expression in another time zone, syntax or daylight-saving
// policy, or with bounds or a calendar, is another trigger.
func TestCacheSharesOnlyEqualTimings(t *testing.T) {
	t.Parallel()
	c := NewCache()
	from := time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)
	build := func(s *models.Schedule, cal *models.Calendar) Trigger {
		t.Helper()
		got, err := c.New(s, cal)
		require.NoError(t, err)
		want, err := New(s, cal)
		require.NoError(t, err)
		for at, n := from, 0; n < 50; n++ {
			w := want.Next(at)
			require.Equal(t, w, got.Next(at), "shared trigger of %+v", s)
			require.Equal(t, w, c.Next(got, at), "memo of %+v", s)
			at = w
		}
		return got
	}
	a := build(cronRow("0 9 * * *", "UTC"), nil)
	require.Equal(t, a, build(cronRow("0 9 * * *", "UTC"), nil), "same row: one trigger")
	require.Equal(t, 1, c.Len())

	paris := build(cronRow("0 9 * * *", "Europe/Paris"), nil)
	require.NotEqual(t, a.Next(from), paris.Next(from), "the zone is part of the key")
	ny := build(cronRow("0 9 * * *", "America/New_York"), nil)
	require.NotEqual(t, paris.Next(from), ny.Next(from))
	// No expression is valid in both syntaxes (a Quartz one has a "?",
	// which the standard syntax refuses): the Quartz entry must not
	// answer for the standard row.
	quartz := cronRow("0 0 9 ? * MON", "UTC")
	quartz.CronSyntax = models.SyntaxQuartz
	build(quartz, nil)
	_, err := c.New(cronRow("0 0 9 ? * MON", "UTC"), nil)
	require.ErrorContains(t, err, "Quartz syntax", "the syntax is part of the key")
	skip := cronRow("30 2 * * *", "Europe/Paris")
	skip.DSTPolicy = models.DSTSkip
	once := cronRow("30 2 * * *", "Europe/Paris")
	gap := time.Date(2030, 3, 31, 0, 0, 0, 0, time.UTC) // 02:30 does not exist that night in Paris
	require.NotEqual(t, build(skip, nil).Next(gap), build(once, nil).Next(gap), "dst_policy is part of the key")

	bounded := cronRow("0 9 * * *", "UTC")
	end := from.Add(72 * time.Hour)
	bounded.EndAt = &end
	b := build(bounded, nil)
	require.True(t, b.Next(end).IsZero(), "end_at applies to a shared expression")

	cal := &models.Calendar{ID: 7, Name: "weekends", Kind: models.CalendarWeekly, Definition: models.JSON(`{"days":["sat","sun"]}`), Timezone: "UTC"}
	withCal := cronRow("0 9 * * *", "UTC")
	withCal.CalendarID = &cal.ID
	wc := build(withCal, cal)
	cal2 := *cal
	cal2.Definition = models.JSON(`{"days":["mon"]}`)
	require.NotEqual(t, wc.Next(from), build(withCal, &cal2).Next(from), "a calendar's definition is part of the key")

	// @every counts from the row's own anchor: never shared.
	e1 := &models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@every 1h"), Timezone: "UTC", CreatedAt: from}
	e2 := &models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@every 1h"), Timezone: "UTC", CreatedAt: from.Add(time.Minute)}
	require.NotEqual(t, build(e1, nil).Next(from), build(e2, nil).Next(from))

	// A bad expression is refused as New refuses it, and not remembered.
	_, err = c.New(cronRow("61 * * * *", "UTC"), nil)
	require.Error(t, err)
	_, err = c.New(cronRow("0 9 * * *", "Nowhere/Atlantis"), nil)
	require.Error(t, err)
}

// Rotate forgets what was not used since the last Rotate.
func TestCacheRotateDropsUnused(t *testing.T) {
	t.Parallel()
	c := NewCache()
	keep, drop := cronRow("0 9 * * *", "UTC"), cronRow("0 10 * * *", "UTC")
	k1, err := c.New(keep, nil)
	require.NoError(t, err)
	_, err = c.New(drop, nil)
	require.NoError(t, err)
	require.Equal(t, 2, c.Len())
	c.Rotate()
	k2, err := c.New(keep, nil)
	require.NoError(t, err)
	require.Equal(t, k1, k2, "used since: still shared")
	c.Rotate()
	require.Equal(t, 1, c.Len())
}
