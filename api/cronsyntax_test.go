package api

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/validate"
)

// A Quartz expression under the standard syntax is a 400 on cron_expr that
// says to set cron_syntax: "0 0 12 ? * 1" was accepted and fired on
// Mondays, Quartz's Sundays.
func TestScheduleQuartzUnderStandardSyntax(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		b.srv.now = func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) } // a Tuesday
		const path = "/api/v1/schedules"
		def := itoa(b.definition("report"))
		body := func(expr, syntax string) string {
			return `{"name":"noon","job_definition_id":` + def + `,"schedule_type":"cron","cron_expr":"` + expr + `"` + syntax + `}`
		}
		for expr, what := range map[string]string{
			"0 0 12 ? * 1":      `"?" in day-of-month is Quartz syntax`,
			"0 15 10 ? * 6L":    `"6L" in day-of-week is Quartz syntax`,
			"0 15 10 * * 6#3":   `"6#3" in day-of-week is Quartz syntax`,
			"0 0 9 LW * ?":      `"LW" in day-of-month is Quartz syntax`,
			"0 0 12 ? * 1 2031": "7 fields (a year last) is Quartz syntax",
		} {
			for _, syntax := range []string{"", `,"cron_syntax":"standard"`} {
				for _, p := range []string{path, path + "?dry_run=true"} {
					b.fails(400, "cron_expr", what, "POST", p, body(expr, syntax))
					b.fails(400, "cron_expr", "set cron_syntax to quartz (--cron-syntax quartz)", "POST", p, body(expr, syntax))
				}
			}
		}
		b.fails(400, "cron_expr", "mind the days: Quartz counts day-of-week 1-7 from Sunday", "POST", path, body("0 0 12 ? * 1", ""))
		rec := b.call("POST", path, body("0 15 10 * * 6L", ""))
		require.NotContains(t, rec.Body.String(), "strconv")

		// With cron_syntax quartz it is Quartz's: Sundays.
		s := b.ok(201, "POST", path, body("0 0 12 ? * 1", `,"cron_syntax":"quartz"`))
		require.Equal(t, "2030-01-06T12:00:00Z", s["next_fires"].([]any)[0])
		// Switching it back to standard, or giving a standard schedule a
		// Quartz expression, is refused likewise.
		b.fails(400, "cron_expr", "set cron_syntax to quartz", "PATCH", path+"/"+itoa(id(s)), `{"cron_syntax":"standard"}`)
		std := b.ok(201, "POST", path, `{"name":"mondays","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 12 * * 1"}`)
		b.fails(400, "cron_expr", `"?" in day-of-month`, "PATCH", path+"/"+itoa(id(std)), `{"cron_expr":"0 0 12 ? * 1"}`)

		// Writers other than the handlers (chime import quartz) get the same.
		expr := "0 0 12 ? * 1"
		defRow := &models.JobDefinition{ID: b.definition("other"), TaskType: "sleep"}
		_, _, err := validate.Schedule(testRegistry(), &models.Schedule{Name: "x", JobDefinitionID: defRow.ID, ScheduleType: models.ScheduleCron,
			CronExpr: &expr, CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce, Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce,
			Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}, defRow, nil, time.Now())
		var ve *validate.Error
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Equal(t, "cron_expr", ve.Field)
		require.Contains(t, ve.Message, "set cron_syntax to quartz")
	})
}
