package scheduleengine

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// A node holds an entry per active schedule, in the allocator's size
// class above its size: 24 bytes more (a field and a column of the row it
// then copied) once moved it from 512 to 576 and a restart of 100,000
// schedules from 175 to 210 MiB of peak RSS. Growing past 256 costs the
// next class, 288, for every schedule: then let it be a choice, and raise
// this.
func TestEntrySize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(entry{}), uintptr(256), "entry grew past the 256-byte size class")
}

// What a restore holds per schedule of a shared expression (the bench's
// restart): the entry and nothing else of its row. Not the name, not a
// copy of the row, no allocation per time or duration.
func TestEntryBytesRetained(t *testing.T) {
	const n = 20_000
	cache, specs, defaults := trigger.NewCache(), map[specKey]string{}, map[*models.JobDefinition]error{}
	def := &models.JobDefinition{ID: 1, MaxAttempts: 1}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := make([]*entry, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range entries {
		r := chimedb.ScheduleRow{
			Schedule: models.Schedule{ID: int64(i + 1), Name: fmt.Sprintf("bench-%07d", i), JobDefinitionID: 1, ScheduleType: models.ScheduleCron,
				CronExpr: ptr("0 0 0 1 1 *"), Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Status: models.ScheduleActive,
				CreatedAt: created, UpdatedAt: created},
			Definition: def,
			Trigger:    &models.TimeTrigger{ScheduleID: int64(i + 1), SpecHash: "x"},
		}
		en, err := buildEntry(&r, cache, specs, defaults)
		require.NoError(t, err)
		entries[i] = en
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(entries)
	t.Logf("%d bytes held per entry (entry %d bytes)", per, unsafe.Sizeof(entry{}))
	// 256 for the entry, 8 for its slot here, and some slack for what
	// the runtime and other goroutines hold at either GC.
	require.LessOrEqual(t, per, int64(320), "an entry holds more than its own struct")
}

// The sum stands for the whole row in unchanged: a field it leaves out
// would be an edit the engine never sees. Every field of models.Schedule
// must change it, nil and a zero value apart.
func TestRowSumCoversSchedule(t *testing.T) {
	t.Parallel()
	base := sumOf(&models.Schedule{})
	typ := reflect.TypeFor[models.Schedule]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		for _, set := range []string{"zero", "other"} {
			var s models.Schedule
			v := reflect.ValueOf(&s).Elem().Field(i)
			fill(t, v, f.Name, set == "other")
			if set == "zero" && v.Kind() != reflect.Pointer {
				continue // a zero non-pointer is the base row itself
			}
			require.NotEqual(t, base, sumOf(&s), "models.Schedule.%s (%s) does not change sumOf", f.Name, set)
		}
	}
	// A value moved from one string field to the next is another row.
	require.NotEqual(t, sumOf(&models.Schedule{Name: "ab"}), sumOf(&models.Schedule{Name: "a", ScheduleType: "b"}))
	// The zone of a time is not the row's: the same instant read in
	// another zone is the same row.
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, sumOf(&models.Schedule{CreatedAt: at}), sumOf(&models.Schedule{CreatedAt: at.In(time.FixedZone("x", 3600))}))
}

// fill sets v to a value other than its zero one (other) or, for a
// pointer, to a pointer to its zero value.
func fill(t *testing.T, v reflect.Value, name string, other bool) {
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if other {
			fill(t, p.Elem(), name, true)
		}
		v.Set(p)
		return
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			t.Fatalf("models.Schedule.%s: a slice of %s: teach sumOf and fill", name, v.Type().Elem())
		}
		v.SetBytes([]byte(`{"x":1}`))
	case reflect.Bool:
		v.SetBool(true)
	default:
		t.Fatalf("models.Schedule.%s is a %s: teach sumOf and fill", name, v.Kind())
	}
}
