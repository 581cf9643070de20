package models

import "time"

// Job priorities: job_definitions.priority is the default, schedules.priority
// (NULL = the definition's) overrides it, and jobs.priority is what a job was
// written with. PriorityDefault is Quartz's default trigger priority, so a
// Quartz priority from 1 to 10 means the same here.
const (
	PriorityMin     = 1
	PriorityMax     = 10
	PriorityDefault = 5
)

// PriorityStep is how much earlier one priority step above another puts a
// job in the claim's order: the claim orders due jobs by jobs.claim_key, which
// is run_at moved PriorityStep earlier per priority above PriorityDefault
// (later below). So a due job is passed over only by jobs that became due less
// than (their priority - its priority) × PriorityStep after it, at most
// (PriorityMax - PriorityMin) × PriorityStep, plus at most the task engine's
// claim floor age while a backlog lasts (see store's selectDue). The
// migrations (00012) hold the same number, in milliseconds.
const PriorityStep = time.Minute

// ValidPriority reports whether p is in PriorityMin..PriorityMax, the range
// the schema's CHECK constraints allow.
func ValidPriority(p int64) bool { return p >= PriorityMin && p <= PriorityMax }
