package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// JobOutcome is how one run ended, as the completer writes it.
type JobOutcome struct {
	ID int64
	// Status is succeeded, failed, stopped, or pending for a failed attempt
	// that will be retried at RunAt.
	Status models.JobStatus
	// FinishedAt is when the run ended (kept NULL for a retry).
	FinishedAt time.Time
	// RunAt is when a retry becomes due; ignored unless Status is pending.
	RunAt  time.Time
	Result *string
	Error  *string
	// Notice, when set on a final outcome, records a completion notice in
	// the same transaction (see OutcomeNotice).
	Notice *OutcomeNotice
}

// CompleteJobsParams is one batch of outcomes from one node.
type CompleteJobsParams struct {
	NodeID   string
	Outcomes []JobOutcome
}

// completeChunk bounds the ids of one UPDATE: each costs 13 placeholders.
const completeChunk = 250

// CompleteJobs writes a batch of outcomes in one transaction with one
// UPDATE per few hundred jobs (CASE id WHEN … per column), the way river's
// completer batches. Every row is guarded: it changes only while it is
// still queued, running or paused on p.NodeID, so a late writer cannot
// overwrite a newer state (a recovery, a cancel). It returns the ids whose
// outcome was written.
//
// The guard sits in the UPDATE's WHERE, so the rule costs one statement
// and the commit: when every row matched, every outcome was written. When
// some did not (one was canceled or recovered meanwhile), that transaction
// is rolled back and the batch is written again behind a locking SELECT
// that says exactly which rows are still ours: the job_logs line of an
// outcome is written only if the outcome was, and so is its notice.
func (s *Store) CompleteJobs(ctx context.Context, p *CompleteJobsParams) ([]int64, error) {
	if len(p.Outcomes) == 0 {
		return nil, nil
	}
	// One outcome per row: of two for one id (a job claimed twice) the
	// first is written, the other reported as not applied.
	outs := make([]JobOutcome, 0, len(p.Outcomes))
	seen := make(map[int64]bool, len(p.Outcomes))
	for _, o := range p.Outcomes {
		if !seen[o.ID] {
			seen[o.ID] = true
			outs = append(outs, o)
		}
	}
	var applied []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		applied = applied[:0]
		for start := 0; start < len(outs); start += completeChunk {
			chunk := outs[start:min(start+completeChunk, len(outs))]
			n, err := s.writeOutcomes(tx, p.NodeID, chunk, nil)
			if err != nil {
				return err
			}
			if n != len(chunk) {
				return errNotAllGuarded
			}
			if err := s.insertOutcomeNotices(tx, chunk, nil); err != nil {
				return err
			}
			for _, o := range chunk {
				applied = append(applied, o.ID)
			}
		}
		return nil
	})
	if errors.Is(err, errNotAllGuarded) {
		err = s.InTx(ctx, func(tx *gorm.DB) error {
			applied = applied[:0]
			for start := 0; start < len(outs); start += completeChunk {
				chunk := outs[start:min(start+completeChunk, len(outs))]
				ids, err := s.completeLocked(tx, p.NodeID, chunk)
				if err != nil {
					return err
				}
				applied = append(applied, ids...)
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs on node %s: %w", len(p.Outcomes), p.NodeID, err)
	}
	return applied, nil
}

// errNotAllGuarded rolls back a completion whose guard left some row out.
var errNotAllGuarded = errors.New("some jobs are no longer active on this node")

// completeLocked locks the rows of outs still active on nodeID, then
// writes their outcomes; it returns their ids.
func (s *Store) completeLocked(tx *gorm.DB, nodeID string, outs []JobOutcome) ([]int64, error) {
	ids := make([]int64, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	var live []int64
	if err := tx.Raw(`SELECT id FROM `+s.jobsByID()+` WHERE id IN ? AND node_id = ? AND status IN ?`+s.lockClause(),
		ids, nodeID, activeStatuses).Scan(&live).Error; err != nil {
		return nil, fmt.Errorf("select jobs to complete: %w", err)
	}
	if len(live) == 0 {
		return nil, nil
	}
	keep := make(map[int64]bool, len(live))
	for _, id := range live {
		keep[id] = true
	}
	if _, err := s.writeOutcomes(tx, nodeID, outs, keep); err != nil {
		return nil, err
	}
	if err := s.insertOutcomeNotices(tx, outs, keep); err != nil {
		return nil, err
	}
	return live, nil
}

// writeOutcomes writes outs (only those in keep, when keep is not nil) with
// one guarded UPDATE and returns how many rows it changed. Every outcome
// changes status, so a changed row is a written outcome.
func (s *Store) writeOutcomes(tx *gorm.DB, nodeID string, outs []JobOutcome, keep map[int64]bool) (int, error) {
	var b strings.Builder
	args := make([]any, 0, 13*len(outs)+4)
	ids := make([]int64, 0, len(outs))
	for _, o := range outs {
		if keep == nil || keep[o.ID] {
			ids = append(ids, o.ID)
		}
	}
	caseOf := func(col string, val func(o *JobOutcome) any) {
		fmt.Fprintf(&b, "%s = CASE id", col)
		for i := range outs {
			if keep == nil || keep[outs[i].ID] {
				b.WriteString(" WHEN ? THEN ?")
				args = append(args, outs[i].ID, val(&outs[i]))
			}
		}
		b.WriteString(" END")
	}
	b.WriteString("UPDATE " + s.jobsByID() + " SET ")
	caseOf("status", func(o *JobOutcome) any { return string(o.Status) })
	b.WriteString(", ")
	caseOf("finished_at", func(o *JobOutcome) any {
		if o.Status == models.JobPending {
			return nil
		}
		return DBTime(o.FinishedAt)
	})
	b.WriteString(", ")
	// A retry is due at RunAt; a final state keeps its run_at.
	caseOf("run_at", func(o *JobOutcome) any {
		if o.Status == models.JobPending {
			return DBTime(o.RunAt)
		}
		return gorm.Expr("run_at")
	})
	b.WriteString(", ")
	caseOf("result", func(o *JobOutcome) any { return o.Result })
	b.WriteString(", ")
	caseOf("error", func(o *JobOutcome) any { return o.Error })
	b.WriteString(", ")
	// A retried job leaves the node so that any node may claim it.
	caseOf("node_id", func(o *JobOutcome) any {
		if o.Status == models.JobPending {
			return ""
		}
		return nodeID
	})
	b.WriteString(", control = '' WHERE id IN ? AND node_id = ? AND status IN ?")
	args = append(args, ids, nodeID, activeStatuses)
	res := tx.Exec(b.String(), args...)
	if res.Error != nil {
		return 0, fmt.Errorf("write job outcomes: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}
