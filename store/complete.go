package store

import (
	"context"
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
func (s *Store) CompleteJobs(ctx context.Context, p *CompleteJobsParams) ([]int64, error) {
	if len(p.Outcomes) == 0 {
		return nil, nil
	}
	var applied []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		applied = applied[:0]
		for start := 0; start < len(p.Outcomes); start += completeChunk {
			chunk := p.Outcomes[start:min(start+completeChunk, len(p.Outcomes))]
			ids, err := s.completeChunk(tx, p.NodeID, chunk)
			if err != nil {
				return err
			}
			applied = append(applied, ids...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs on node %s: %w", len(p.Outcomes), p.NodeID, err)
	}
	return applied, nil
}

func (s *Store) completeChunk(tx *gorm.DB, nodeID string, outs []JobOutcome) ([]int64, error) {
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
	var b strings.Builder
	args := make([]any, 0, 13*len(live)+1)
	caseOf := func(col string, val func(o *JobOutcome) any) {
		fmt.Fprintf(&b, "%s = CASE id", col)
		for i := range outs {
			if keep[outs[i].ID] {
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
	b.WriteString(", control = '' WHERE id IN ?")
	args = append(args, live)
	if err := tx.Exec(b.String(), args...).Error; err != nil {
		return nil, fmt.Errorf("write job outcomes: %w", err)
	}
	return live, nil
}
