package scheduleengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/chimesched/chime/models"
)

// entry is the engine's view of one active schedule.
type entry struct {
	sched       models.Schedule
	trig        Trigger
	params      models.JSON // definition defaults merged with the schedule's params
	maxAttempts int
	last        *time.Time // last_fire_at
	fired       int64
	misfired    int64
	next        time.Time // first occurrence after last; zero when used up
	key         string    // triggerKey of the row
	timer       *timer    // the gocron job timing this schedule; nil when none
}

// after is the instant whose successor is the schedule's next occurrence.
func (e *entry) after() time.Time {
	if e.last != nil {
		return *e.last
	}
	if e.sched.ScheduleType == models.ScheduleOnce {
		// A once schedule inserted with a run_at already past still runs
		// (as a catch-up when it is later than the misfire threshold).
		return time.Time{}
	}
	// Never fired: occurrences count from the row's creation, so a
	// schedule created while no leader ran is caught up like any other.
	return e.sched.CreatedAt.UTC().Add(-time.Nanosecond)
}

func (e *entry) remaining() *int64 {
	if e.sched.MaxRuns == nil {
		return nil
	}
	r := max(int64(*e.sched.MaxRuns)-e.fired, 0)
	return &r
}

func (e *entry) usedUp() bool {
	r := e.remaining()
	return e.next.IsZero() || (r != nil && *r == 0)
}

func (e *entry) triggerRow() TriggerRow {
	t := TriggerRow{ScheduleID: e.sched.ID, LastFireAt: e.last, FiredCount: e.fired, RemainingCount: e.remaining(), MisfiredCount: e.misfired}
	if !e.next.IsZero() {
		n := e.next
		t.NextFireAt = &n
	}
	return t
}

// newEntry builds the entry of an active schedule row, or returns the reason
// it cannot be scheduled.
func newEntry(r *ScheduleRow) (*entry, error) {
	s := r.Schedule
	if r.Definition == nil {
		return nil, fmt.Errorf("job definition %d does not exist", s.JobDefinitionID)
	}
	trig, err := NewTrigger(&s)
	if err != nil {
		return nil, err
	}
	params, err := mergeParams(r.Definition.DefaultParams, s.Params)
	if err != nil {
		return nil, err
	}
	e := &entry{sched: s, trig: trig, params: params, maxAttempts: max(r.Definition.MaxAttempts, 1), key: triggerKey(r)}
	if t := r.Trigger; t != nil {
		if t.LastFireAt != nil {
			l := t.LastFireAt.UTC()
			e.last = &l
		}
		e.fired, e.misfired = t.FiredCount, t.MisfiredCount
	}
	e.next = trig.Next(e.after())
	return e, nil
}

// mergeParams lays the schedule's params over the definition's defaults, key
// by key at the top level (the paper's ParameterContext).
func mergeParams(defaults, params models.JSON) (models.JSON, error) {
	d, err := jsonObject(defaults, "job definition default_params")
	if err != nil {
		return nil, err
	}
	p, err := jsonObject(params, "schedule params")
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return defaults, nil
	}
	if len(d) == 0 {
		return params, nil
	}
	maps.Copy(d, p)
	out, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("merge params: %w", err)
	}
	return out, nil
}

func jsonObject(j models.JSON, what string) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(j)) == 0 || string(bytes.TrimSpace(j)) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, errors.New(what + " is not a JSON object")
	}
	return m, nil
}
