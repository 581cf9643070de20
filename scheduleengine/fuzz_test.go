package scheduleengine

import (
	"github.com/chimesched/chime/chimedb"
	"math"
	"testing"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// fuzzTime maps any int64 to an instant from a year before models.MinTime
// to a year after models.MaxTime, to the second: times a row may hold,
// and a little past them either side.
func fuzzTime(v int64) time.Time {
	lo, hi := models.MinTime.AddDate(-1, 0, 0).Unix(), models.MaxTime.AddDate(1, 0, 0).Unix()
	span := uint64(hi - lo)
	return time.Unix(lo+int64(uint64(v)%span), 0).UTC()
}

var fuzzZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata"}

// FuzzPlan: whatever a schedules row holds (interval, cron expression in
// either syntax, anchor, bounds, window) and whatever its trigger row says
// of the last fire, trigger.New returns without panicking; an accepted
// row's Next goes strictly forward and never past models.MaxTime; and
// computePlan ends within maxPlanAsks questions to the trigger (a walk
// that loops panics in countedTrigger) with a bounded number of fires.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(1), int64(9223372037), "", false, uint8(0), int64(0), int64(0), int64(0), int64(0), int64(-1), int64(0), int64(0), uint8(0))
	f.Add(uint8(1), int64(60), "", false, uint8(0), int64(-62135596800), int64(0), int64(0), int64(0), int64(-1), int64(-62135596800), int64(1893456000), uint8(0))
	f.Add(uint8(0), int64(0), "* * * * * *", false, uint8(1), int64(0), int64(1893456000), int64(0), int64(0), int64(30), int64(1893456000), int64(1924992000), uint8(2))
	f.Add(uint8(0), int64(0), "* * * * * ? 2030", true, uint8(0), int64(0), int64(1893456000), int64(0), int64(0), int64(-1), int64(1893455999), int64(1938000000), uint8(1))
	f.Add(uint8(0), int64(0), "@every 1s", false, uint8(3), int64(-30610224000), int64(0), int64(0), int64(0), int64(math.MaxInt32), int64(0), int64(253402300799), uint8(2))
	f.Add(uint8(2), int64(0), "", false, uint8(0), int64(0), int64(0), int64(253402300799), int64(0), int64(-1), int64(0), int64(1893456000), uint8(0))
	f.Add(uint8(0), int64(0), "30 2 * * *", false, uint8(1), int64(0), int64(1900000000), int64(0), int64(0), int64(-1), int64(1900000000), int64(1910000000), uint8(3))
	f.Fuzz(func(t *testing.T, kind uint8, interval int64, expr string, quartz bool, zone uint8, start, created, runAt, end, window, last, now int64, policy uint8) {
		if len(expr) > 255 {
			return // the API refuses longer cron_expr values; SQL cannot store them in MySQL
		}
		s := models.Schedule{ScheduleType: []models.ScheduleType{models.ScheduleCron, models.ScheduleInterval, models.ScheduleOnce}[kind%3],
			Timezone: fuzzZones[int(zone)%len(fuzzZones)], CreatedAt: fuzzTime(created),
			DSTPolicy: []models.DSTPolicy{models.DSTOnce, models.DSTSkip, models.DSTBoth, models.DSTWall}[int(zone)%4]}
		switch s.ScheduleType {
		case models.ScheduleCron:
			s.CronExpr = &expr
			if quartz {
				s.CronSyntax = models.SyntaxQuartz
			}
		case models.ScheduleInterval:
			iv := int(interval)
			s.IntervalSeconds = &iv
		case models.ScheduleOnce:
			at := fuzzTime(runAt)
			s.RunAt = &at
		}
		if start != 0 {
			at := fuzzTime(start)
			s.StartAt = &at
		}
		if end != 0 {
			at := fuzzTime(end)
			s.EndAt = &at
		}
		if window >= 0 {
			w := int(window)
			s.CatchupWindowSeconds = &w
		}
		trig, err := trigger.New(&s, nil)
		if err != nil {
			return
		}
		at := fuzzTime(last)
		for range 5 {
			n := trig.Next(at)
			if n.IsZero() {
				break
			}
			if !n.After(at) || n.After(models.MaxTime) {
				t.Fatalf("%+v: Next(%v) = %v", s, at, n)
			}
			at = n
		}

		en, err := newEntry(&chimedb.ScheduleRow{Schedule: s, Definition: &models.JobDefinition{}})
		if err != nil {
			t.Fatalf("%+v: trigger.New took it, newEntry did not: %v", s, err)
		}
		asks := new(int)
		in := planInput{trig: countedTrigger{Trigger: trig, asks: asks}, after: fuzzTime(last), threshold: time.Duration(uint64(policy)) * time.Hour / 10,
			policy: []models.MisfirePolicy{models.MisfireFireOnce, models.MisfireSkip, models.MisfireFireAll}[policy%3], fireAll: 100,
			window: en.window}
		p := computePlan(in, fuzzTime(now))
		if len(p.fires) > maxSteps+in.fireAll {
			t.Fatalf("%+v: %d fires in one plan", s, len(p.fires))
		}
		if !p.next.IsZero() && !p.last.IsZero() && !p.next.After(p.last) {
			t.Fatalf("%+v: next %v not after last %v", s, p.next, p.last)
		}
	})
}
