package scheduleengine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// entry is the engine's view of one active schedule. A node holds one per
// active schedule for as long as it leads, so its size is the restore's
// memory: TestEntrySize pins it below a size class. It keeps of the row
// only what the engine reads after building it (sched) and a sum of the
// rest (row), by which a re-read row is known unchanged.
type entry struct {
	sched       schedHead
	row         rowSum
	def         *models.JobDefinition // as read with sched; shared by the schedules of one definition
	cal         *models.Calendar      // as read with sched; nil when it names none
	trig        trigger.Trigger
	params      models.JSON    // definition defaults merged with the schedule's params
	window      *time.Duration // catchup_window_seconds; nil when none
	last        *time.Time     // last_fire_at
	fired       int64
	misfired    int64
	next        time.Time     // first occurrence after last; zero when used up
	restoreUpTo time.Time     // occurrences up to this passed while the schedule was not driven: missed
	spec        string        // specHash of sched: its timing
	since       *time.Time    // the timing was changed then; occurrences count from it (time_triggers.spec_changed_at)
	lead        time.Duration // how long before next its fire is prepared (Config.FireAhead; 0 for forbid)
	hold        int64         // UnixNano before which it is not tried again: its row was held (chimedb.WriteFiresResult.Busy); 0 when not
	// Two halves of one word.
	hidx int32  // position in Engine.heap; -1 when not there
	seen uint32 // the last full read (Engine.epoch) that returned the row
}

// schedHead is what the engine reads of a schedule's row once its entry
// is built (the trigger, the params and the sum hold the rest), and the
// max_attempts its jobs get. The row's enumerations are a byte each, and
// share a word with maxAttempts.
type schedHead struct {
	ID          int64
	target      int64 // the definition its fires are jobs of; the workflow, when workflow
	MaxRuns     *int
	CreatedAt   time.Time
	misfire     uint8 // index in misfirePolicies
	forbid      bool  // concurrency forbid
	once        bool  // schedule_type once
	workflow    bool  // its fires are runs of the workflow target (schedules.workflow_id)
	maxAttempts int32 // the definition's max_attempts, at least 1
}

// misfirePolicies are the misfire_policy values trigger.New accepts.
var misfirePolicies = [...]models.MisfirePolicy{"", models.MisfireFireOnce, models.MisfireSkip, models.MisfireFireAll}

// policy is the schedule's misfire_policy.
func (h *schedHead) policy() models.MisfirePolicy { return misfirePolicies[h.misfire] }

func headOf(s *models.Schedule, d *models.JobDefinition) (schedHead, error) {
	h := schedHead{ID: s.ID, target: s.JobDefinitionID, MaxRuns: s.MaxRuns, CreatedAt: s.CreatedAt,
		forbid: s.Concurrency == models.ConcurrencyForbid, once: s.ScheduleType == models.ScheduleOnce}
	i := slices.Index(misfirePolicies[:], s.MisfirePolicy)
	if i < 0 {
		return schedHead{}, fmt.Errorf("unknown misfire_policy %q", s.MisfirePolicy)
	}
	h.misfire = uint8(i)
	if d == nil { // a workflow's schedule (buildEntry checked it names one)
		h.target, h.workflow, h.maxAttempts = *s.WorkflowID, true, 1
		return h, nil
	}
	h.maxAttempts = int32(min(max(d.MaxAttempts, 1), math.MaxInt32))
	return h, nil
}

// wake is when the engine takes the entry up: its next fire, less the
// lead with which that fire is prepared, or later while it is held.
func (e *entry) wake() time.Time {
	w := e.next.Add(-e.lead)
	if e.hold != 0 {
		if h := time.Unix(0, e.hold).UTC(); h.After(w) {
			return h
		}
	}
	return w
}

// held reports whether the entry waits for its row at now.
func (e *entry) held(now time.Time) bool { return e.hold != 0 && now.UnixNano() < e.hold }

// after is the instant whose successor is the schedule's next occurrence.
func (e *entry) after() time.Time {
	if e.since != nil && (e.last == nil || e.last.Before(*e.since)) {
		// The timing was edited after the last fire: the schedule starts
		// afresh, counting from the edit as a new row counts from its
		// creation, so the edit itself leaves nothing to catch up.
		return e.since.Add(-time.Nanosecond)
	}
	if e.last != nil {
		return *e.last
	}
	if e.sched.once {
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

func (e *entry) triggerRow() chimedb.TriggerRow {
	t := chimedb.TriggerRow{ScheduleID: e.sched.ID, LastFireAt: e.last, FiredCount: e.fired, RemainingCount: e.remaining(), MisfiredCount: e.misfired,
		SpecHash: e.spec, SpecChangedAt: e.since}
	if !e.usedUp() { // max_runs may be spent with occurrences left
		n := e.next
		t.NextFireAt = &n
	}
	return t
}

// newEntry builds the entry of an active schedule row, or returns the reason
// it cannot be scheduled.
func newEntry(r *chimedb.ScheduleRow) (*entry, error) {
	return buildEntry(r, trigger.NewCache(), map[specKey]string{}, map[*models.JobDefinition]error{})
}

func (e *Engine) newEntry(r *chimedb.ScheduleRow) (*entry, error) {
	en, err := buildEntry(r, e.cache, e.specs, e.defaults)
	if err == nil && !en.sched.forbid {
		// A forbid schedule's fire depends on whether its last job has
		// finished, and its claim locks the schedule's row: prepared
		// early, it would decide too soon and hold that claim up.
		en.lead = e.cfg.FireAhead
	}
	return en, err
}

// buildEntry is newEntry sharing what schedules have in common through
// the engine's memos: the trigger of an expression (cache), the
// fingerprint of a timing (specs), and a definition's checked defaults
// (defaults), which are a schedule's params when it has none of its own.
// A restore of a million schedules of a few expressions then parses,
// hashes and allocates per expression, not per schedule.
func buildEntry(r *chimedb.ScheduleRow, cache *trigger.Cache, specs map[specKey]string, defaults map[*models.JobDefinition]error) (*entry, error) {
	s := r.Schedule
	if s.Unreadable != "" {
		return nil, errors.New(s.Unreadable)
	}
	if err := checkTarget(r); err != nil {
		return nil, err
	}
	trig, err := cache.New(&s, r.Calendar)
	if err != nil {
		return nil, err
	}
	var window *time.Duration
	if w := s.CatchupWindowSeconds; w != nil {
		d, err := models.CatchupWindowBound.Duration(int64(*w))
		if err != nil {
			return nil, err
		}
		window = &d
	}
	var params models.JSON
	if s.WorkflowID != nil {
		// A run's params are the schedule's own: each step merges them
		// with its definition's defaults when it is written.
		if _, err := models.MergeParams(nil, s.Params); err != nil {
			return nil, err
		}
		if !noParams(s.Params) {
			params = s.Params
		}
	} else if noParams(s.Params) {
		err, ok := defaults[r.Definition]
		if !ok {
			_, err = models.MergeParams(r.Definition.DefaultParams, nil)
			defaults[r.Definition] = err
		}
		params = r.Definition.DefaultParams
		if err != nil {
			return nil, err
		}
	} else if params, err = models.MergeParams(r.Definition.DefaultParams, s.Params); err != nil {
		return nil, err
	}
	k := specKeyOf(&s, r.Calendar)
	spec, ok := specs[k]
	if !ok {
		spec = specHash(&s, r.Calendar)
		if len(specs) >= maxSpecs {
			clear(specs) // once schedules each have their own run_at: not worth holding
		}
		specs[k] = spec
	}
	head, err := headOf(&s, r.Definition)
	if err != nil {
		return nil, err
	}
	e := &entry{sched: head, row: sumOf(&s), def: r.Definition, cal: r.Calendar, trig: trig, params: params, hidx: -1,
		spec: spec, window: window}
	t := r.Trigger
	if t == nil {
		t = &models.TimeTrigger{}
	}
	if err := models.CheckTimes(models.TimeColumn{Column: "time_triggers.last_fire_at", T: t.LastFireAt},
		models.TimeColumn{Column: "time_triggers.spec_changed_at", T: t.SpecChangedAt}); err != nil {
		return nil, err
	}
	if t.SpecChangedAt != nil && t.SpecHash == e.spec {
		c := t.SpecChangedAt.UTC()
		e.since = &c
	}
	e.setStateVia(cache, t.LastFireAt, t.FiredCount, t.MisfiredCount)
	return e, nil
}

// checkTarget says why r names no one thing to fire: a schedule names
// exactly one of a job definition (which must exist and be readable) and
// a workflow. The CHECK holds that on MySQL and PostgreSQL, and on
// SQLite; a row written before it, or by a tool that dropped it, is
// still refused here.
func checkTarget(r *chimedb.ScheduleRow) error {
	s := &r.Schedule
	switch {
	case s.WorkflowID != nil && s.JobDefinitionID != 0:
		return fmt.Errorf("the schedule names both job definition %d and workflow %d; it must name exactly one", s.JobDefinitionID, *s.WorkflowID)
	case s.WorkflowID != nil && *s.WorkflowID <= 0:
		return fmt.Errorf("workflow_id %d names no workflow", *s.WorkflowID)
	case s.WorkflowID != nil && r.Workflow == nil:
		return fmt.Errorf("workflow %d does not exist", *s.WorkflowID)
	case s.WorkflowID != nil:
		return nil
	case s.JobDefinitionID == 0 && r.Definition == nil:
		return errors.New("the schedule names neither a job definition nor a workflow; it must name exactly one")
	case r.Definition == nil:
		return fmt.Errorf("job definition %d does not exist", s.JobDefinitionID)
	}
	if _, _, err := r.Definition.Durations(); err != nil {
		return fmt.Errorf("job definition %d: %w", s.JobDefinitionID, err)
	}
	return nil
}

// maxSpecs bounds the specHash memo.
const maxSpecs = 1 << 16

// noParams reports whether a schedule's params add nothing to its
// definition's defaults (MergeParams returns the defaults as they are).
func noParams(p models.JSON) bool {
	t := bytes.TrimSpace(p)
	return len(t) == 0 || string(t) == "null"
}

// unchanged reports whether r is the row en was built from, with no fire
// recorded in it that en has not seen: re-applying it would build the same
// entry.
func (e *entry) unchanged(r *chimedb.ScheduleRow) bool {
	if (r.Definition == nil && r.Schedule.WorkflowID == nil) || (r.Schedule.WorkflowID != nil && r.Workflow == nil) || e.row != sumOf(&r.Schedule) || !reflect.DeepEqual(e.def, r.Definition) ||
		!reflect.DeepEqual(e.cal, r.Calendar) {
		return false
	}
	t := r.Trigger
	if t == nil || t.LastFireAt == nil {
		return true
	}
	return e.last != nil && !t.LastFireAt.After(*e.last)
}

// catchUpTo moves en's firing state forward to that of a commit the row en
// was built from did not show yet (read before the commit, applied after
// it). Fire state only ever moves forward, so the later of the two wins.
func (e *entry) catchUpTo(last time.Time, fired, misfired int64) {
	if !last.IsZero() && (e.last == nil || e.last.Before(last)) {
		e.setState(&last, fired, misfired)
	}
}

// setState sets en's firing state. adopt in finish calls it with the
// stored row's, which may move it backwards: the write that reported the
// row found it elsewhere than en expected, and the table is the truth.
func (e *entry) setState(last *time.Time, fired, misfired int64) {
	e.setStateVia(nil, last, fired, misfired)
}

// setStateVia is setState asking the next occurrence through cache's
// memo, when cache is not nil.
func (e *entry) setStateVia(cache *trigger.Cache, last *time.Time, fired, misfired int64) {
	e.last = nil
	if last != nil {
		l := last.UTC()
		e.last = &l
	}
	e.fired, e.misfired = fired, misfired
	if cache != nil {
		e.next = cache.Next(e.trig, e.after())
	} else {
		e.next = e.trig.Next(e.after())
	}
}
