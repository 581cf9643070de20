package store

import (
	"time"

	"github.com/chimesched/chime/models"
)

// idx_jobs_claim_order (status, claim_key, id) is the one index of jobs
// that holds status (00013 dropped idx_jobs_claim (status, run_at)). A
// query that bounds run_at reaches a range on it through these bounds:
// claim_key lies within claimKeyLead before and claimKeySlack after run_at.
// Each keeps its run_at condition, which stays exact.

// claimKeyLead is how far before run_at a claim_key may be: that of the
// highest priority, plus a millisecond for SQLite's rounding of run_at.
const claimKeyLead = (models.PriorityMax-models.PriorityDefault)*models.PriorityStep + time.Millisecond

// claimKeySlack is how far past now a due row's claim_key may be: that of
// the lowest priority, plus a millisecond for SQLite, which rounds run_at to
// the millisecond where the others truncate.
const claimKeySlack = (models.PriorityDefault-models.PriorityMin)*models.PriorityStep + time.Millisecond

// ClaimKeyUntil is the largest claim_key of a row whose run_at is at or
// before t.
func ClaimKeyUntil(t time.Time) int64 { return t.Add(claimKeySlack).UnixMilli() }

// ClaimKeyFrom is the smallest claim_key of a row whose run_at is at or
// after t. Conversely a row whose claim_key is at or below it has a run_at
// before t, whatever its priority.
func ClaimKeyFrom(t time.Time) int64 { return t.Add(-claimKeyLead).UnixMilli() }
