package validate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
	"github.com/chimesched/chime/validate"
)

func registry() *tasks.Registry {
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	return reg
}

// refused asserts err is a *validate.Error at field whose message says want.
func refused(t *testing.T, err error, field, want string) {
	t.Helper()
	e, ok := errors.AsType[*validate.Error](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, field, e.Field)
	require.Contains(t, e.Message, want)
}

// Writers holding a row (chime import quartz) get the checks a create
// request gets, the NUL check included, and the row the API would store.
func TestRows(t *testing.T) {
	reg := registry()
	d, err := validate.Definition(reg, &models.JobDefinition{Name: "d", TaskType: sleep.Kind, MaxAttempts: 1,
		NotifyOn: models.NotifyNever, NotifyEmails: " ops@example.com , ", DefaultParams: models.JSON(`{ "duration" : "1s" }`),
		Priority: models.PriorityDefault})
	require.NoError(t, err)
	require.Equal(t, "ops@example.com", d.NotifyEmails)
	require.JSONEq(t, `{"duration":"1s"}`, string(d.DefaultParams))
	require.Equal(t, `{"duration":"1s"}`, string(d.DefaultParams), "compacted")

	_, err = validate.Definition(reg, &models.JobDefinition{Name: "d\x00", TaskType: sleep.Kind, MaxAttempts: 1, NotifyOn: models.NotifyNever})
	refused(t, err, "name", "NUL")
	_, err = validate.Definition(reg, &models.JobDefinition{Name: "d", TaskType: "nope", MaxAttempts: 1, NotifyOn: models.NotifyNever})
	refused(t, err, "task_type", `unknown task_type "nope"`)
	_, err = validate.Definition(nil, &models.JobDefinition{Name: "d"})
	require.Error(t, err)

	d.ID = 7
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	row := models.Schedule{Name: "s", JobDefinitionID: 7, ScheduleType: models.ScheduleOnce, RunAt: &at, Timezone: "UTC",
		CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce, MisfirePolicy: models.MisfireFireOnce,
		Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
	created := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	s, trig, err := validate.Schedule(reg, &row, d, nil, created)
	require.NoError(t, err)
	require.True(t, trig.Next(created).Equal(*s.RunAt))
	require.Equal(t, time.UTC, s.RunAt.Location())
	require.True(t, s.RunAt.Equal(at.Truncate(time.Microsecond)))
	require.Equal(t, created, s.CreatedAt)

	_, _, err = validate.Schedule(reg, &row, nil, nil, created)
	refused(t, err, "job_definition_id", "does not exist")
	for tz, want := range map[string]string{"": "must not be empty", "Local": `"Local" is not allowed`, "Mars/Olympus": "unknown timezone"} {
		bad := row
		bad.Timezone = tz
		_, _, err = validate.Schedule(reg, &bad, d, nil, created)
		refused(t, err, "timezone", want)
		_, err = validate.Calendar(&models.Calendar{Name: "c", Kind: models.CalendarWeekly, Definition: models.JSON(`{"days":["sun"]}`), Timezone: tz})
		refused(t, err, "timezone", want)
	}

	c, err := validate.Calendar(&models.Calendar{Name: "c", Kind: models.CalendarWeekly, Definition: models.JSON(`{ "days" : ["sun"] }`), Timezone: "UTC"})
	require.NoError(t, err)
	require.Equal(t, `{"days":["sun"]}`, string(c.Definition))
	_, err = validate.Calendar(&models.Calendar{Name: "c", Kind: "lunar", Definition: models.JSON(`{}`), Timezone: "UTC"})
	refused(t, err, "kind", "unknown kind")
	_, err = validate.Calendar(&models.Calendar{Name: "123", Kind: models.CalendarWeekly, Timezone: "UTC"})
	refused(t, err, "name", "all digits")
}
