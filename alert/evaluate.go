package alert

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// Store is what alerting reads and writes; the store implements it.
type Store interface {
	chimedb.AlertStore
	Admin() chimedb.AdminQueries
}

// EvaluatorConfig configures an Evaluator; zero fields take the defaults.
type EvaluatorConfig struct {
	// Interval is how often the rules are judged (default 15s).
	Interval time.Duration
	// Leading tells whether this node holds the maintenance lease; the
	// Evaluator judges only while it does (nil: always, for one node).
	Leading func() bool
	// Lookback is how far back a leader that has just taken over reads
	// finished jobs (default 1h): what its predecessor may not have
	// judged. The dedupe key makes the re-read harmless.
	Lookback time.Duration
	// OnRecorded is called after a pass recorded alerts (the dispatcher's
	// Wake).
	OnRecorded func()
	Logger     logrus.FieldLogger
	Clock      clockwork.Clock
}

// overlap is how far each pass reads back before the last one's end: a
// job whose final state committed late (its finished_at is the database's
// clock at the update, the commit comes after) is still seen.
const overlap = 5 * time.Minute

// Evaluator judges the rules; see the package doc.
type Evaluator struct {
	st       Store
	cfg      EvaluatorConfig
	lastScan time.Time
	// since is when each backlog rule's count condition was first seen
	// true; a new leader starts it again (documented).
	since map[int64]time.Time
	// lastPrune is when the pass last deleted old lease_changes rows.
	lastPrune time.Time
	startstop.Base
}

// NewEvaluator returns an Evaluator over st; cfg is copied.
func NewEvaluator(st Store, cfg *EvaluatorConfig) *Evaluator {
	var c EvaluatorConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Interval <= 0 {
		c.Interval = 15 * time.Second
	}
	if c.Lookback <= 0 {
		c.Lookback = time.Hour
	}
	if c.Leading == nil {
		c.Leading = func() bool { return true }
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return &Evaluator{st: st, cfg: c, since: map[int64]time.Time{}}
}

// Start runs passes every Interval until Stop.
func (e *Evaluator) Start(ctx context.Context) error {
	ctx, finished, ok := e.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer finished()
		t := e.cfg.Clock.NewTicker(e.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
			}
			if !e.cfg.Leading() {
				e.lastScan = time.Time{} // a later leadership reads back Lookback again
				continue
			}
			if _, err := e.Pass(ctx); err != nil && ctx.Err() == nil {
				e.cfg.Logger.WithError(err).Warn("alert: evaluating the rules failed; retrying next pass")
			}
		}
	}()
	return nil
}

// Stop ends the evaluator.
func (e *Evaluator) Stop(ctx context.Context) error { return e.Base.Stop(ctx) }

// rule is a valid, enabled rule with its params.
type rule struct {
	models.AlertRule
	p *models.AlertParams
}

// Pass judges every rule once at the clock's now and records what it
// found; it returns how many alerts it recorded.
func (e *Evaluator) Pass(ctx context.Context) (int, error) {
	now := e.cfg.Clock.Now()
	all, err := e.st.ListAlertRules(ctx)
	if err != nil {
		return 0, err
	}
	chans, err := e.st.ListAlertChannels(ctx)
	if err != nil {
		return 0, err
	}
	enabled := map[int64]bool{}
	for _, c := range chans {
		enabled[c.ID] = c.Enabled && c.Invalid == ""
	}
	var rules []rule
	for _, r := range all {
		if !r.Enabled || !enabled[r.ChannelID] {
			continue
		}
		if r.Invalid != "" {
			e.cfg.Logger.WithField("rule", r.Name).WithField("reason", r.Invalid).Debug("alert: rule invalid, skipped")
			continue
		}
		p, err := r.ParsedParams()
		if err != nil {
			continue
		}
		rules = append(rules, rule{r, p})
	}
	from := e.lastScan.Add(-overlap)
	if e.lastScan.IsZero() || now.Sub(from) > e.cfg.Lookback {
		from = now.Add(-e.cfg.Lookback)
	}
	var recs []chimedb.AlertRecord
	names := newNamer(e.st.Admin())
	jobRecs, err := e.jobEvents(ctx, rules, from, now, names)
	if err != nil {
		return 0, err
	}
	recs = append(recs, jobRecs...)
	early, err := e.earlyEvents(ctx, rules, from, now, names)
	if err != nil {
		return 0, err
	}
	recs = append(recs, early...)
	runs, err := e.runEvents(ctx, rules, from, now)
	if err != nil {
		return 0, err
	}
	recs = append(recs, runs...)
	for _, r := range rules {
		var more []chimedb.AlertRecord
		var err error
		switch r.Event {
		case models.EventDeadline:
			more, err = e.deadline(ctx, r, now, names)
		case models.EventSlow:
			more, err = e.slow(ctx, r, now, names)
		case models.EventBacklog:
			more, err = e.backlog(ctx, r, now)
		case models.EventNodeLost:
			more, err = e.nodeLost(ctx, r, now)
		case models.EventLeaseFlapping:
			more, err = e.flapping(ctx, r, now)
		}
		if err != nil {
			e.cfg.Logger.WithError(err).WithField("rule", r.Name).Warn("alert: judging the rule failed")
			continue
		}
		recs = append(recs, more...)
	}
	e.prune(ctx, now)
	n := 0
	if len(recs) > 0 {
		if n, err = e.st.RecordAlerts(ctx, recs); err != nil {
			return 0, err
		}
	}
	e.lastScan = now
	if n > 0 && e.cfg.OnRecorded != nil {
		e.cfg.OnRecorded()
	}
	return n, nil
}

// namer caches definition and schedule names for one pass.
type namer struct {
	q      chimedb.AdminQueries
	defs   map[int64]string
	scheds map[int64]string
}

func newNamer(q chimedb.AdminQueries) *namer {
	return &namer{q: q, defs: map[int64]string{}, scheds: map[int64]string{}}
}

func (n *namer) fill(ctx context.Context, jobs []models.Job) {
	var d, s []int64
	for _, j := range jobs {
		if _, ok := n.defs[j.JobDefinitionID]; !ok {
			d = append(d, j.JobDefinitionID)
		}
		if j.ScheduleID != nil {
			if _, ok := n.scheds[*j.ScheduleID]; !ok {
				s = append(s, *j.ScheduleID)
			}
		}
	}
	if len(d) > 0 {
		if m, err := n.q.DefinitionNames(ctx, d); err == nil {
			for _, id := range d {
				n.defs[id] = m[id]
			}
		}
	}
	if len(s) > 0 {
		if m, err := n.q.ScheduleNames(ctx, s); err == nil {
			for _, id := range s {
				n.scheds[id] = m[id]
			}
		}
	}
}

// base is a job's payload: names, the job, its subject.
func (n *namer) base(j *models.Job) (*Payload, string) {
	p := &Payload{Version: PayloadVersion, Job: jobInfo(j), Definition: &Ref{ID: j.JobDefinitionID, Name: n.defs[j.JobDefinitionID]}}
	subject := fmt.Sprintf("definition:%d", j.JobDefinitionID)
	if j.ScheduleID != nil {
		p.Schedule = &Ref{ID: *j.ScheduleID, Name: n.scheds[*j.ScheduleID]}
		subject = fmt.Sprintf("schedule:%d", *j.ScheduleID)
	}
	p.Subject = subject
	return p, subject
}

func (n *namer) label(j *models.Job) string {
	name := n.defs[j.JobDefinitionID]
	if name == "" {
		name = fmt.Sprintf("definition %d", j.JobDefinitionID)
	}
	if j.ScheduleID != nil {
		if s := n.scheds[*j.ScheduleID]; s != "" {
			return fmt.Sprintf("%s (schedule %s, job %d)", name, s, j.ID)
		}
	}
	return fmt.Sprintf("%s (job %d)", name, j.ID)
}

// inScope says whether job j is in rule r's scope; members holds, for the
// queue and workflow scopes, the ids of the jobs read in them (nil: the
// jobs were read in the rule's scope already).
func inScope(r *rule, j *models.Job, members map[string]map[int64]bool) bool {
	switch r.Scope {
	case models.ScopeDefinition:
		return r.DefinitionID != nil && *r.DefinitionID == j.JobDefinitionID
	case models.ScopeSchedule:
		return r.ScheduleID != nil && j.ScheduleID != nil && *r.ScheduleID == *j.ScheduleID
	case models.ScopeQueue, models.ScopeWorkflow:
		return members == nil || members[scopeKey(r)][j.ID]
	}
	return true
}

// scopeKey names a queue or workflow scope, and is the subject of the
// alerts about it as a whole (backlog).
func scopeKey(r *rule) string {
	switch {
	case r.Scope == models.ScopeQueue && r.Queue != nil:
		return "queue:" + *r.Queue
	case r.Scope == models.ScopeWorkflow && r.WorkflowID != nil:
		return fmt.Sprintf("workflow:%d", *r.WorkflowID)
	}
	return ""
}

// narrow restricts q to rule r's scope.
func narrow(q *chimedb.AlertJobQuery, r *rule) {
	switch r.Scope {
	case models.ScopeDefinition:
		q.DefinitionID = *r.DefinitionID
	case models.ScopeSchedule:
		q.ScheduleID = *r.ScheduleID
	case models.ScopeQueue:
		q.Queue = *r.Queue
	case models.ScopeWorkflow:
		q.WorkflowID = *r.WorkflowID
	}
}

// members reads, for each queue and workflow scope of rules, the ids of
// the jobs of q in it: which queue a job ran in, and which workflow its
// run belongs to, are other rows' columns, which the database joins.
func (e *Evaluator) members(ctx context.Context, rules []rule, q chimedb.AlertJobQuery) (map[string]map[int64]bool, error) {
	out := map[string]map[int64]bool{}
	for i := range rules {
		r := &rules[i]
		key := scopeKey(r)
		if key == "" || out[key] != nil {
			continue
		}
		set := map[int64]bool{}
		sq := q
		narrow(&sq, r)
		for range 50 {
			page, err := e.st.AlertJobs(ctx, &sq)
			if err != nil {
				return nil, err
			}
			for _, j := range page {
				set[j.ID] = true
			}
			if len(page) < sq.Limit || page[len(page)-1].FinishedAt == nil {
				break
			}
			sq.FinishedFrom = *page[len(page)-1].FinishedAt
		}
		out[key] = set
	}
	return out, nil
}

var finalStatuses = []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled}

func isJobEvent(e models.AlertEvent) bool {
	switch e {
	case models.EventJobFailed, models.EventRetriesExhausted, models.EventJobRecovered, models.EventJobCanceled,
		models.EventCatchUp, models.EventJobRescued:
		return true
	}
	return false
}

// jobEvents reads the jobs finished in [from, now] and matches them to
// the job rules.
func (e *Evaluator) jobEvents(ctx context.Context, rules []rule, from, now time.Time, names *namer) ([]chimedb.AlertRecord, error) {
	var jr []rule
	for _, r := range rules {
		if isJobEvent(r.Event) {
			jr = append(jr, r)
		}
	}
	if len(jr) == 0 {
		return nil, nil
	}
	var jobs []models.Job
	q := &chimedb.AlertJobQuery{Statuses: finalStatuses, FinishedFrom: from, FinishedTo: now.Add(time.Second), Limit: chimedb.MaxAlertJobs}
	for range 50 { // at most 50k jobs a pass; the next pass reads on
		page, err := e.st.AlertJobs(ctx, q)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, page...)
		if len(page) < q.Limit || page[len(page)-1].FinishedAt == nil {
			break
		}
		q.FinishedFrom = *page[len(page)-1].FinishedAt
	}
	names.fill(ctx, jobs)
	members, err := e.members(ctx, jr, chimedb.AlertJobQuery{Statuses: finalStatuses, FinishedFrom: from,
		FinishedTo: now.Add(time.Second), Limit: chimedb.MaxAlertJobs})
	if err != nil {
		return nil, err
	}
	// prev is the last final status seen per subject in this pass, for
	// job_recovered; the first job of a subject asks the database.
	prev := map[string]models.JobStatus{}
	seen := map[int64]bool{}
	var recs []chimedb.AlertRecord
	for i := range jobs {
		j := &jobs[i]
		if seen[j.ID] || j.FinishedAt == nil {
			continue
		}
		seen[j.ID] = true
		_, subject := names.base(j)
		before, known := prev[subject]
		prev[subject] = j.Status
		for k := range jr {
			r := &jr[k]
			if !inScope(r, j, members) || j.FinishedAt.Before(r.CreatedAt) {
				continue
			}
			var summary string
			details := map[string]any{}
			label := names.label(j)
			switch r.Event {
			case models.EventJobFailed:
				if j.Status != models.JobFailed {
					continue
				}
				summary = fmt.Sprintf("%s failed (attempt %d of %d)", label, j.Attempt, j.MaxAttempts)
			case models.EventRetriesExhausted:
				if j.Status != models.JobFailed || j.MaxAttempts <= 1 || j.Attempt < j.MaxAttempts {
					continue
				}
				summary = fmt.Sprintf("%s failed after all %d attempts", label, j.MaxAttempts)
			case models.EventJobCanceled:
				if j.Status != models.JobCanceled && j.Status != models.JobStopped {
					continue
				}
				summary = fmt.Sprintf("%s was %s", label, j.Status)
			case models.EventCatchUp:
				if !j.CatchUp || j.MissedFires <= 0 {
					continue
				}
				summary = fmt.Sprintf("%s caught up %d missed fires in one run (%s)", label, j.MissedFires, j.Status)
				details["missed_fires"] = j.MissedFires
			case models.EventJobRescued:
				if j.Recoveries <= 0 {
					continue
				}
				summary = fmt.Sprintf("%s was taken back from a lost node or reset by the reconciler %d times, and ended %s", label, j.Recoveries, j.Status)
				details["recoveries"] = j.Recoveries
			case models.EventJobRecovered:
				if j.Status != models.JobSucceeded {
					continue
				}
				if !known {
					var err error
					if before, err = e.previousStatus(ctx, j); err != nil {
						return nil, err
					}
					known = true
				}
				if before != models.JobFailed {
					continue
				}
				summary = fmt.Sprintf("%s succeeded after the previous run failed", label)
			}
			p, subject := names.base(j)
			p.Event, p.State, p.Summary, p.OccurredAt = r.Event, models.AlertFiring, summary, j.FinishedAt.UTC()
			p.Rule = &Ref{ID: r.ID, Name: r.Name}
			if len(details) > 0 {
				p.Details = details
			}
			recs = append(recs, e.record(r, p, subject, jobKey(r, j), now, ""))
		}
	}
	return recs, nil
}

// previousStatus is the final status of the job of j's subject that
// finished last before j.
func (e *Evaluator) previousStatus(ctx context.Context, j *models.Job) (models.JobStatus, error) {
	q := &chimedb.AlertJobQuery{Statuses: finalStatuses, FinishedTo: j.FinishedAt.Add(time.Microsecond), Order: chimedb.ByFinishedAtDesc, Limit: 2}
	if j.ScheduleID != nil {
		q.ScheduleID = *j.ScheduleID
	} else {
		q.DefinitionID = j.JobDefinitionID
	}
	got, err := e.st.AlertJobs(ctx, q)
	if err != nil {
		return "", err
	}
	for _, g := range got {
		if g.ID != j.ID {
			return g.Status, nil
		}
	}
	return "", nil
}

// record builds the record of p.
func (e *Evaluator) record(r *rule, p *Payload, subject, key string, now time.Time, resolves string) chimedb.AlertRecord {
	p.ID = key
	raw, _ := json.Marshal(p)
	return chimedb.AlertRecord{At: now, ThrottleSeconds: r.ThrottleSeconds, Resolves: resolves, Alert: models.Alert{
		RuleID: r.ID, ChannelID: r.ChannelID, Event: r.Event, State: p.State, Subject: subject, DedupeKey: key,
		Summary: p.Summary, Payload: raw,
	}}
}

// open returns the rule's unresolved alerts by dedupe key.
func (e *Evaluator) open(ctx context.Context, r *rule, now time.Time) (map[string]models.Alert, error) {
	as, err := e.st.OpenAlerts(ctx, []models.AlertEvent{r.Event}, now.Add(-8*24*time.Hour), 1000)
	if err != nil {
		return nil, err
	}
	out := map[string]models.Alert{}
	for _, a := range as {
		if a.RuleID == r.ID {
			out[a.DedupeKey] = a
		}
	}
	return out, nil
}

// resolve returns the resolved record of open alert a.
func (e *Evaluator) resolve(r *rule, a *models.Alert, summary string, now time.Time) chimedb.AlertRecord {
	var p Payload
	_ = json.Unmarshal(a.Payload, &p)
	p.Version, p.State, p.Summary, p.OccurredAt = PayloadVersion, models.AlertResolved, summary, now.UTC()
	p.Rule = &Ref{ID: r.ID, Name: r.Name}
	return e.record(r, &p, a.Subject, a.DedupeKey+":resolved", now, a.DedupeKey)
}

// deadline judges a deadline rule of one schedule: "done by HH:MM" on
// each of the last two local days the schedule fires on before that
// time, and "started within N" of each recent fire.
func (e *Evaluator) deadline(ctx context.Context, r rule, now time.Time, names *namer) ([]chimedb.AlertRecord, error) {
	s, err := e.st.Admin().GetSchedule(ctx, *r.ScheduleID)
	if err != nil {
		return nil, err
	}
	open, err := e.open(ctx, &r, now)
	if err != nil {
		return nil, err
	}
	var recs []chimedb.AlertRecord
	ref := &Ref{ID: s.ID, Name: s.Name}
	subject := fmt.Sprintf("schedule:%d", s.ID)
	if r.p.By != "" {
		loc := r.p.Loc
		if loc == nil {
			if loc, err = time.LoadLocation(s.Timezone); err != nil {
				return nil, fmt.Errorf("schedule %s: time zone %q: %w", s.Name, s.Timezone, err)
			}
		}
		var cal *models.Calendar
		if s.CalendarID != nil {
			if cal, err = e.st.Admin().GetCalendar(ctx, *s.CalendarID); err != nil {
				return nil, err
			}
		}
		trig, err := trigger.New(s, cal)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
		}
		local := now.In(loc)
		for back := 1; back >= 0; back-- {
			y, m, d := local.AddDate(0, 0, -back).Date()
			dayStart := time.Date(y, m, d, 0, 0, 0, 0, loc)
			due := time.Date(y, m, d, r.p.ByHour, r.p.ByMinute, 0, 0, loc)
			if now.Before(due) || due.Before(r.CreatedAt) {
				continue
			}
			fire := trig.Next(dayStart.Add(-time.Nanosecond))
			if fire.IsZero() || !fire.Before(due) {
				continue // the schedule does not run that day before the deadline
			}
			jobs, err := e.st.AlertJobs(ctx, &chimedb.AlertJobQuery{ScheduleID: s.ID, ScheduledFrom: dayStart, ScheduledTo: due, Limit: 100})
			if err != nil {
				return nil, err
			}
			var doneBy, doneLate *models.Job
			for i := range jobs {
				j := &jobs[i]
				if j.Status == models.JobSucceeded && j.FinishedAt != nil {
					if !j.FinishedAt.After(due) {
						doneBy = j
					} else if doneLate == nil {
						doneLate = j
					}
				}
			}
			if doneBy != nil {
				continue
			}
			day := fmt.Sprintf("%04d-%02d-%02d", y, m, d)
			key := fmt.Sprintf("r%d:deadline:%d:%s", r.ID, s.ID, day)
			if a, ok := open[key]; ok && doneLate != nil {
				recs = append(recs, e.resolve(&r, &a, fmt.Sprintf("schedule %s: the run of %s finished late, at %s (deadline %s %s)",
					s.Name, day, doneLate.FinishedAt.In(loc).Format("15:04:05"), r.p.By, loc), now))
				continue
			}
			p := &Payload{Version: PayloadVersion, Event: r.Event, State: models.AlertFiring, OccurredAt: due.UTC(), Schedule: ref,
				Subject: subject, Rule: &Ref{ID: r.ID, Name: r.Name}, Details: map[string]any{
					"deadline": due.UTC(), "by": r.p.By, "time_zone": loc.String(), "day": day, "expected_fire": fire.UTC()}}
			p.Summary = fmt.Sprintf("schedule %s: the run of %s was not done by %s %s", s.Name, day, r.p.By, loc)
			if len(jobs) > 0 {
				p.Job = jobInfo(&jobs[len(jobs)-1])
			}
			recs = append(recs, e.record(&r, p, subject, key, now, ""))
			if doneLate != nil {
				// Found late: missed, and met since, in one pass.
				a := models.Alert{DedupeKey: key, Subject: subject, Payload: recs[len(recs)-1].Alert.Payload}
				recs = append(recs, e.resolve(&r, &a, fmt.Sprintf("schedule %s: the run of %s finished late, at %s", s.Name, day,
					doneLate.FinishedAt.In(loc).Format("15:04:05")), now))
			}
		}
	}
	if r.p.StartWithinSeconds > 0 {
		within := time.Duration(r.p.StartWithinSeconds) * time.Second
		jobs, err := e.st.AlertJobs(ctx, &chimedb.AlertJobQuery{ScheduleID: s.ID,
			ScheduledFrom: maxTime(now.Add(-24*time.Hour), r.CreatedAt), ScheduledTo: now.Add(-within), Order: chimedb.ByRunAt, Limit: 100})
		if err != nil {
			return nil, err
		}
		names.fill(ctx, jobs)
		for i := range jobs {
			j := &jobs[i]
			key := fmt.Sprintf("r%d:start:job:%d", r.ID, j.ID)
			started := j.StartedAt != nil || j.Status.Finished() || j.Status == models.JobRunning || j.Status == models.JobPaused
			lateStart := j.StartedAt != nil && j.StartedAt.Sub(j.ScheduledAt) > within
			if a, ok := open[key]; ok {
				if started {
					recs = append(recs, e.resolve(&r, &a, fmt.Sprintf("%s started", names.label(j)), now))
				}
				continue
			}
			if started && !lateStart {
				continue
			}
			p, _ := names.base(j)
			p.Event, p.State, p.OccurredAt, p.Rule = r.Event, models.AlertFiring, j.ScheduledAt.Add(within).UTC(), &Ref{ID: r.ID, Name: r.Name}
			p.Summary = fmt.Sprintf("%s had not started %v after its scheduled time", names.label(j), within)
			p.Details = map[string]any{"start_within_seconds": r.p.StartWithinSeconds}
			recs = append(recs, e.record(&r, p, subject, key, now, ""))
			if started {
				a := models.Alert{DedupeKey: key, Subject: subject, Payload: recs[len(recs)-1].Alert.Payload}
				recs = append(recs, e.resolve(&r, &a, fmt.Sprintf("%s started late", names.label(j)), now))
			}
		}
	}
	return recs, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// slow judges running jobs against a fixed duration or k × the median of
// their definition's recent successful runs, and resolves the alerts of
// runs that ended.
func (e *Evaluator) slow(ctx context.Context, r rule, now time.Time, names *namer) ([]chimedb.AlertRecord, error) {
	q := &chimedb.AlertJobQuery{Statuses: []models.JobStatus{models.JobRunning}, Order: chimedb.ByStartedAt, Limit: chimedb.MaxAlertJobs}
	narrow(q, &r)
	running, err := e.st.AlertJobs(ctx, q)
	if err != nil {
		return nil, err
	}
	open, err := e.open(ctx, &r, now)
	if err != nil {
		return nil, err
	}
	names.fill(ctx, running)
	medians := map[int64]time.Duration{}
	var recs []chimedb.AlertRecord
	live := map[string]bool{}
	for i := range running {
		j := &running[i]
		if j.StartedAt == nil || !inScope(&r, j, nil) {
			continue
		}
		key := fmt.Sprintf("r%d:slow:job:%d:%d", r.ID, j.ID, j.Attempt)
		live[key] = true
		took := now.Sub(*j.StartedAt)
		var limit time.Duration
		var why string
		if r.p.MaxSeconds > 0 {
			limit, why = time.Duration(r.p.MaxSeconds)*time.Second, fmt.Sprintf("more than %ds", r.p.MaxSeconds)
		}
		if r.p.MedianFactor > 0 {
			med, ok := medians[j.JobDefinitionID]
			if !ok {
				if med, err = e.median(ctx, j.JobDefinitionID, r.p.MedianOf); err != nil {
					return nil, err
				}
				medians[j.JobDefinitionID] = med
			}
			if med > 0 {
				if l := time.Duration(float64(med) * r.p.MedianFactor); limit == 0 || l < limit {
					limit, why = l, fmt.Sprintf("%.3g × the recent median of %v", r.p.MedianFactor, med.Round(time.Millisecond))
				}
			}
		}
		if limit <= 0 || took <= limit {
			continue
		}
		p, _ := names.base(j)
		p.Event, p.State, p.OccurredAt, p.Rule = r.Event, models.AlertFiring, j.StartedAt.Add(limit).UTC(), &Ref{ID: r.ID, Name: r.Name}
		p.Summary = fmt.Sprintf("%s has run %v, %s", names.label(j), took.Round(time.Second), why)
		p.Details = map[string]any{"running_seconds": int64(took.Seconds()), "limit_seconds": limit.Seconds()}
		recs = append(recs, e.record(&r, p, fmt.Sprintf("definition:%d", j.JobDefinitionID), key, now, ""))
	}
	for key, a := range open {
		if !live[key] {
			recs = append(recs, e.resolve(&r, &a, "the slow run ended: "+a.Summary, now))
		}
	}
	return recs, nil
}

// median is the median run time of the last n (default 20) successful
// jobs of definition def; 0 with fewer than 3.
func (e *Evaluator) median(ctx context.Context, def int64, n int) (time.Duration, error) {
	if n <= 0 {
		n = 20
	}
	jobs, err := e.st.AlertJobs(ctx, &chimedb.AlertJobQuery{DefinitionID: def, Statuses: []models.JobStatus{models.JobSucceeded},
		Order: chimedb.ByFinishedAtDesc, Limit: n})
	if err != nil {
		return 0, err
	}
	var ds []time.Duration
	for _, j := range jobs {
		if j.StartedAt != nil && j.FinishedAt != nil && j.FinishedAt.After(*j.StartedAt) {
			ds = append(ds, j.FinishedAt.Sub(*j.StartedAt))
		}
	}
	if len(ds) < 3 {
		return 0, nil
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// backlog judges due jobs waiting: the oldest longer than wait_seconds,
// or more than max_due of them for for_seconds.
func (e *Evaluator) backlog(ctx context.Context, r rule, now time.Time) ([]chimedb.AlertRecord, error) {
	q := &chimedb.AlertJobQuery{Statuses: []models.JobStatus{models.JobPending}, RunAtTo: now, Order: chimedb.ByRunAt,
		Limit: min(max(r.p.MaxDue+1, 1), chimedb.MaxAlertJobs)}
	subject := "cluster"
	narrow(q, &r)
	switch r.Scope {
	case models.ScopeDefinition:
		subject = fmt.Sprintf("definition:%d", *r.DefinitionID)
	case models.ScopeSchedule:
		subject = fmt.Sprintf("schedule:%d", *r.ScheduleID)
	case models.ScopeQueue, models.ScopeWorkflow:
		subject = truncate(scopeKey(&r), 180)
	}
	due, err := e.st.AlertJobs(ctx, q)
	if err != nil {
		return nil, err
	}
	open, err := e.open(ctx, &r, now)
	if err != nil {
		return nil, err
	}
	var why string
	details := map[string]any{}
	if r.p.WaitSeconds > 0 && len(due) > 0 {
		if waited := now.Sub(due[0].RunAt); waited > time.Duration(r.p.WaitSeconds)*time.Second {
			why = fmt.Sprintf("the oldest due job (%d) has waited %v, more than %ds", due[0].ID, waited.Round(time.Second), r.p.WaitSeconds)
			details["oldest_wait_seconds"] = int64(waited.Seconds())
		}
	}
	if r.p.MaxDue > 0 {
		if len(due) > r.p.MaxDue {
			since, ok := e.since[r.ID]
			if !ok {
				since = now
				e.since[r.ID] = now
			}
			if why == "" && now.Sub(since) >= time.Duration(r.p.ForSeconds)*time.Second {
				why = fmt.Sprintf("more than %d jobs have been due for %v", r.p.MaxDue, now.Sub(since).Round(time.Second))
				details["due_at_least"] = len(due)
			}
		} else {
			delete(e.since, r.ID)
		}
	}
	var recs []chimedb.AlertRecord
	if why == "" {
		keys := make([]string, 0, len(open))
		for k := range open {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := open[k]
			recs = append(recs, e.resolve(&r, &a, "the backlog drained ("+subject+")", now))
		}
		return recs, nil
	}
	if len(open) > 0 {
		return nil, nil // still firing: one alert per episode
	}
	p := &Payload{Version: PayloadVersion, Event: r.Event, State: models.AlertFiring, OccurredAt: now.UTC(), Subject: subject,
		Rule: &Ref{ID: r.ID, Name: r.Name}, Summary: "backlog (" + subject + "): " + why, Details: details}
	// A rule has one subject: cut, it still tells the episodes apart, and
	// fits alerts.dedupe_key with ":resolved" after it.
	key := fmt.Sprintf("r%d:backlog:%s:%d", r.ID, truncate(subject, 100), now.Unix())
	return append(recs, e.record(&r, p, subject, key, now, "")), nil
}

// nodeLost reports the nodes declared dead since the rule exists (and in
// the last day).
func (e *Evaluator) nodeLost(ctx context.Context, r rule, now time.Time) ([]chimedb.AlertRecord, error) {
	nodes, err := e.st.Admin().ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var recs []chimedb.AlertRecord
	for _, n := range nodes {
		if n.Status != chimedb.NodeDead || n.HeartbeatAt.Before(r.CreatedAt.Add(-10*time.Minute)) || n.HeartbeatAt.Before(now.Add(-24*time.Hour)) {
			continue
		}
		subject := "node:" + n.ID
		p := &Payload{Version: PayloadVersion, Event: r.Event, State: models.AlertFiring, OccurredAt: n.HeartbeatAt.UTC(), Subject: subject,
			Rule: &Ref{ID: r.ID, Name: r.Name}, Node: n.ID,
			Summary: fmt.Sprintf("node %s (%s, pid %d) was declared dead; its last heartbeat was at %s", n.ID, n.Hostname, n.PID,
				n.HeartbeatAt.UTC().Format(time.RFC3339))}
		key := fmt.Sprintf("r%d:node:%s:%d", r.ID, truncate(n.ID, 100), n.HeartbeatAt.Unix())
		recs = append(recs, e.record(&r, p, truncate(subject, 180), key, now, ""))
	}
	return recs, nil
}

// flapping judges a lease_flapping rule: the lease taken more than
// max_changes times in the last within_seconds fires, once per episode;
// back to at most max_changes, it resolves.
func (e *Evaluator) flapping(ctx context.Context, r rule, now time.Time) ([]chimedb.AlertRecord, error) {
	window := time.Duration(r.p.WithinSeconds) * time.Second
	changes, err := e.st.LeaseChanges(ctx, r.p.Lease, now.Add(-window), chimedb.MaxAlertJobs)
	if err != nil {
		return nil, err
	}
	var in []models.LeaseChange
	for _, c := range changes {
		if !c.ChangedAt.After(now) && !c.ChangedAt.Before(r.CreatedAt) {
			in = append(in, c)
		}
	}
	open, err := e.open(ctx, &r, now)
	if err != nil {
		return nil, err
	}
	subject := "lease:" + r.p.Lease
	if len(in) <= r.p.MaxChanges {
		var recs []chimedb.AlertRecord
		keys := make([]string, 0, len(open))
		for k := range open {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := open[k]
			recs = append(recs, e.resolve(&r, &a, fmt.Sprintf("the %s lease has calmed down: %d changes of holder in the last %v",
				r.p.Lease, len(in), window), now))
		}
		return recs, nil
	}
	if len(open) > 0 {
		return nil, nil // still flapping: one alert per episode
	}
	var holders []string
	for _, c := range in[max(len(in)-10, 0):] {
		holders = append(holders, c.Holder)
	}
	p := &Payload{Version: PayloadVersion, Event: r.Event, State: models.AlertFiring, OccurredAt: in[len(in)-1].ChangedAt.UTC(),
		Subject: subject, Rule: &Ref{ID: r.ID, Name: r.Name},
		Summary: fmt.Sprintf("the %s lease changed hands %d times in the last %v (more than %d); last taken by %s",
			r.p.Lease, len(in), window, r.p.MaxChanges, in[len(in)-1].Holder),
		Details: map[string]any{"lease": r.p.Lease, "changes": len(in), "max_changes": r.p.MaxChanges,
			"within_seconds": r.p.WithinSeconds, "last_holders": holders}}
	key := fmt.Sprintf("r%d:lease_flapping:%s:%d", r.ID, r.p.Lease, now.Unix())
	return []chimedb.AlertRecord{e.record(&r, p, subject, key, now, "")}, nil
}

// leaseChangesKept is how long lease_changes rows are kept: longer than
// the widest window a rule may ask for.
const leaseChangesKept = models.MaxFlapWindowSeconds*time.Second + 24*time.Hour

// prune deletes old lease_changes rows, once an hour.
func (e *Evaluator) prune(ctx context.Context, now time.Time) {
	if !e.lastPrune.IsZero() && now.Sub(e.lastPrune) < time.Hour {
		return
	}
	if _, err := e.st.PruneLeaseChanges(ctx, now.Add(-leaseChangesKept)); err != nil {
		e.cfg.Logger.WithError(err).Warn("alert: deleting old lease changes failed; retrying next hour")
	}
	e.lastPrune = now
}

// jobKey is the dedupe key of a job event. A catch-up job is one
// occurrence, and a rescue one per recovery, whether seen as it happens
// (earlyEvents) or when the job finishes: the key is the same, so the
// alert is sent once.
func jobKey(r *rule, j *models.Job) string {
	switch r.Event {
	case models.EventCatchUp:
		return fmt.Sprintf("r%d:catch_up:job:%d", r.ID, j.ID)
	case models.EventJobRescued:
		return fmt.Sprintf("r%d:job_rescued:job:%d:%d", r.ID, j.ID, j.Recoveries)
	}
	return fmt.Sprintf("r%d:%s:job:%d:%s:%d", r.ID, r.Event, j.ID, j.Status, j.Attempt)
}

var activeStatuses = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

// earlyEvents reports catch_up and job_rescued when they happen, not when
// the job finishes: catch-up jobs scheduled since the last pass (a
// catch-up job is written when it is due), and unfinished jobs with
// recoveries. jobEvents still sees those it missed as they finish.
func (e *Evaluator) earlyEvents(ctx context.Context, rules []rule, from, now time.Time, names *namer) ([]chimedb.AlertRecord, error) {
	var recs []chimedb.AlertRecord
	for i := range rules {
		r := &rules[i]
		q := &chimedb.AlertJobQuery{Order: chimedb.ByRunAt, Limit: chimedb.MaxAlertJobs}
		switch r.Event {
		case models.EventCatchUp:
			q.CatchUp, q.ScheduledFrom, q.ScheduledTo = true, from, now.Add(time.Second)
		case models.EventJobRescued:
			q.Statuses, q.MinRecoveries = activeStatuses, 1
		default:
			continue
		}
		narrow(q, r)
		jobs, err := e.st.AlertJobs(ctx, q)
		if err != nil {
			return nil, err
		}
		names.fill(ctx, jobs)
		for k := range jobs {
			j := &jobs[k]
			if j.Status.Finished() {
				continue // jobEvents judges it
			}
			p, subject := names.base(j)
			label := names.label(j)
			p.Event, p.State, p.Rule = r.Event, models.AlertFiring, &Ref{ID: r.ID, Name: r.Name}
			if r.Event == models.EventCatchUp {
				if j.ScheduledAt.Before(r.CreatedAt) {
					continue
				}
				p.OccurredAt = j.CreatedAt.UTC()
				p.Summary = fmt.Sprintf("%s catches up %d missed fires in one run (now %s)", label, j.MissedFires, j.Status)
				p.Details = map[string]any{"missed_fires": j.MissedFires}
			} else {
				if j.UpdatedAt.Before(r.CreatedAt) {
					continue
				}
				p.OccurredAt = j.UpdatedAt.UTC()
				p.Summary = fmt.Sprintf("%s was taken back from a lost node or reset by the reconciler (%d times so far); it is %s again",
					label, j.Recoveries, j.Status)
				p.Details = map[string]any{"recoveries": j.Recoveries}
			}
			recs = append(recs, e.record(r, p, subject, jobKey(r, j), now, ""))
		}
	}
	return recs, nil
}

// runEvents reads the workflow runs finished in [from, now] and matches
// them to the workflow_failed and workflow_succeeded rules.
func (e *Evaluator) runEvents(ctx context.Context, rules []rule, from, now time.Time) ([]chimedb.AlertRecord, error) {
	var recs []chimedb.AlertRecord
	for i := range rules {
		r := &rules[i]
		status := models.RunFailed
		switch r.Event {
		case models.EventWorkflowFailed:
		case models.EventWorkflowSucceeded:
			status = models.RunSucceeded
		default:
			continue
		}
		q := &chimedb.AlertRunQuery{Statuses: []models.RunStatus{status}, FinishedFrom: from, FinishedTo: now.Add(time.Second)}
		if r.Scope == models.ScopeWorkflow {
			q.WorkflowID = *r.WorkflowID
		}
		runs, err := e.st.AlertRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			if run.FinishedAt == nil || run.FinishedAt.Before(r.CreatedAt) {
				continue
			}
			name := run.WorkflowName
			if name == "" {
				name = fmt.Sprintf("workflow %d", run.WorkflowID)
			}
			subject := fmt.Sprintf("workflow:%d", run.WorkflowID)
			p := &Payload{Version: PayloadVersion, Event: r.Event, State: models.AlertFiring, OccurredAt: run.FinishedAt.UTC(),
				Subject: subject, Rule: &Ref{ID: r.ID, Name: r.Name}, Workflow: &Ref{ID: run.WorkflowID, Name: run.WorkflowName},
				Run: &RunInfo{ID: run.ID, Status: run.Status, Generation: run.Generation, StartedAt: utc(run.StartedAt),
					FinishedAt: utc(run.FinishedAt), Reason: truncate(run.Reason, 2048)}}
			p.Summary = fmt.Sprintf("%s (run %d) %s", name, run.ID, run.Status)
			if run.Reason != "" {
				p.Summary += ": " + truncate(run.Reason, 200)
			}
			key := fmt.Sprintf("r%d:%s:run:%d:%d", r.ID, r.Event, run.ID, run.Generation)
			recs = append(recs, e.record(r, p, subject, key, now, ""))
		}
	}
	return recs, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
