package cli

import (
	"context"
	"fmt"
	"strconv"
)

// names looks up, once per id, the names a table shows instead of ids: a
// list page holds few distinct definitions and schedules. A row that
// cannot be read (deleted, or the lookup failed) is shown by its id.
type names struct {
	ctx   context.Context
	c     *client
	defs  map[int64]*defInfo
	sched map[int64]string
}

type defInfo struct {
	name        string
	maxAttempts int
}

func newNames(ctx context.Context, c *client) *names {
	return &names{ctx: ctx, c: c, defs: map[int64]*defInfo{}, sched: map[int64]string{}}
}

func (n *names) definition(id int64) *defInfo {
	if d, ok := n.defs[id]; ok {
		return d
	}
	var row definitionRow
	d := &defInfo{name: itoa(id)}
	if err := n.c.do(n.ctx, "GET", definitionsPath+"/"+itoa(id), nil, nil, &row); err == nil {
		d.name, d.maxAttempts = row.Name, row.MaxAttempts
	}
	n.defs[id] = d
	return d
}

func (n *names) schedule(id *int64) string {
	if id == nil {
		return "-"
	}
	if s, ok := n.sched[*id]; ok {
		return s
	}
	var row scheduleRow
	s := itoa(*id)
	if err := n.c.do(n.ctx, "GET", schedulesPath+"/"+itoa(*id), nil, nil, &row); err == nil {
		s = row.Name
	}
	n.sched[*id] = s
	return s
}

// attempts is the ATTEMPT cell: max_attempts 0 (a job inserted with plain
// SQL) means the definition's.
func (n *names) attempts(j *jobRow) string {
	max := strconv.Itoa(j.MaxAttempts)
	if j.MaxAttempts <= 0 {
		max = "?"
		if d := n.definition(j.JobDefinitionID); d.maxAttempts > 0 {
			max = strconv.Itoa(d.maxAttempts)
		}
	}
	return fmt.Sprintf("%d/%s", j.Attempt, max)
}
