package store

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Broadcast (run on every node): a pending job of a definition with
// broadcast = TRUE is a seed. The claim that picks one reads the live
// nodes that run jobs, are not draining and have the job's required tags
// (this node among them when it has them), and turns the seed into one
// job per such node in its own transaction: the seed becomes one shard
// (this node's, when it is among them, so the claim takes it at once),
// and a copy is inserted for each other node. Every shard carries
// shard_index, shard_total, shard_group (the seed's id) and target_node;
// only its node claims it while that node is live and undrained; after,
// a node with its tags takes it over (see shardCheck). The run as a whole is the
// rows of one shard_group: it succeeded when they all have. The copies
// belong to no schedule (a schedule's (schedule_id, scheduled_at) is
// unique, and a forbid schedule would hold all but one), and take the
// queue and required tags the seed resolved to.

// expandBroadcast turns the seeds among rows into shards (see above).
// A seed whose tags no live node has is left as it is: the placement
// check holds it with that reason.
func (s *Store) expandBroadcast(tx *gorm.DB, l *claimLimits, rows []models.Job, now time.Time) error {
	for i := range rows {
		r := &rows[i]
		d := l.defs[r.JobDefinitionID]
		if d == nil || !d.bcast || r.ShardTotal != nil || l.decided[r.ID] {
			continue
		}
		raw, _ := l.rowTags(r)
		v := l.place.parse(raw)
		if v.err != nil {
			continue // held as invalid by placeCheck
		}
		if !l.place.read {
			if err := s.readLiveNodes(tx, l); err != nil {
				return err
			}
		}
		targets := l.broadcastTargets(v.tags)
		if len(targets) == 0 {
			continue
		}
		if err := s.writeShards(tx, l, r, targets, now); err != nil {
			return err
		}
	}
	return nil
}

// broadcastTargets are the nodes a seed requiring tags runs on: this one
// first when it has them, then the others by id.
func (l *claimLimits) broadcastTargets(tags []string) []string {
	var out []string
	for id, have := range l.place.others {
		if len(models.MissingTags(tags, have)) == 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	if len(models.MissingTags(tags, l.place.tags)) == 0 {
		out = append([]string{l.place.nodeID}, out...)
	}
	return out
}

// writeShards makes seed r shard 0 on targets[0] and inserts a copy for
// each other target, and logs it on the seed.
func (s *Store) writeShards(tx *gorm.DB, l *claimLimits, r *models.Job, targets []string, now time.Time) error {
	total := len(targets)
	queue, _ := l.rowQueue(r)
	tags, _ := l.rowTags(r)
	if err := tx.Exec(`UPDATE jobs SET shard_index = 0, shard_total = ?, shard_group = ?, target_node = ? WHERE id = ?`,
		total, r.ID, targets[0], r.ID).Error; err != nil {
		return fmt.Errorf("make job %d a broadcast's first shard: %w", r.ID, err)
	}
	zero, group, first := 0, r.ID, targets[0]
	r.ShardIndex, r.ShardTotal, r.ShardGroup, r.TargetNode = &zero, &total, &group, &first
	for i, node := range targets[1:] {
		idx, n := i+1, node
		c := models.Job{JobDefinitionID: r.JobDefinitionID, ScheduledAt: r.ScheduledAt, RunAt: r.RunAt, Status: models.JobPending,
			Control: models.ControlNone, MaxAttempts: r.MaxAttempts, Priority: r.Priority, Params: r.Params, Queue: &queue,
			CatchUp: r.CatchUp, MissedFires: r.MissedFires, ShardIndex: &idx, ShardTotal: &total, ShardGroup: &group, TargetNode: &n,
			CreatedAt: now, UpdatedAt: now}
		if tags != "" {
			c.RequiredTags = &tags
		}
		if err := tx.Create(&c).Error; err != nil {
			return fmt.Errorf("insert shard %d of broadcast job %d: %w", idx, r.ID, err)
		}
	}
	return s.insertJobLogs(tx, []models.JobLog{{JobID: r.ID, Level: "info", CreatedAt: now,
		Message: fmt.Sprintf("broadcast: one job per live node, %d in all (shard_group %d): %s", total, r.ID, strings.Join(targets, ", "))}})
}

// shardCheck says whether this node takes shard r. Its target takes it;
// while the target is live and not draining, no other node does. A
// shard whose target is not (declared dead, stopped, its row gone,
// draining, or no longer running jobs) still stands for its index of the
// run: this node takes it over when it has the shard's tags (see
// retargetClaimed), another live node with them is left to do so, and
// when there is none the shard waits with the reason.
func (l *claimLimits) shardCheck(r *models.Job) (reason, kind, by string) {
	target := *r.TargetNode
	if target == l.place.nodeID {
		return "", "", ""
	}
	if _, ok := l.place.others[target]; ok {
		return "", placeElsewhere, "job"
	}
	raw, from := l.rowTags(r)
	v := l.place.parse(raw)
	if v.err != nil {
		return fmt.Sprintf("waiting: the %s's required_tags cannot be read: %v", from, v.err), chimedb.LimitInvalid, "job"
	}
	if len(models.MissingTags(v.tags, l.place.tags)) == 0 {
		if l.place.retarget == nil {
			l.place.retarget = map[int64]string{}
		}
		l.place.retarget[r.ID] = target
		return "", "", ""
	}
	for _, other := range l.place.others {
		if len(models.MissingTags(v.tags, other)) == 0 {
			return "", placeElsewhere, "job"
		}
	}
	return fmt.Sprintf("waiting: shard %d of %d of broadcast %d: its node %s is not live, or is draining, and no live node that runs jobs has the tags %q to take it over",
		deref(r.ShardIndex), deref(r.ShardTotal), deref(r.ShardGroup), target, strings.Join(v.tags, ",")), chimedb.LimitPlacement, "job"
}

// retargetClaimed makes this node the target of the claimed shards it took
// over from a node that is not live (see shardCheck), in the claim's
// transaction, and says so in each one's log. A shard the limits held
// back stays as it was: a later claim decides again.
func (s *Store) retargetClaimed(tx *gorm.DB, l *claimLimits, claimed []models.Job, now time.Time) error {
	if len(l.place.retarget) == 0 {
		return nil
	}
	var ids []int64
	var logs []models.JobLog
	for i := range claimed {
		r := &claimed[i]
		was, ok := l.place.retarget[r.ID]
		if !ok {
			continue
		}
		me := l.place.nodeID
		r.TargetNode = &me
		ids = append(ids, r.ID)
		logs = append(logs, models.JobLog{JobID: r.ID, Level: "warning", CreatedAt: now,
			Message: fmt.Sprintf("broadcast: shard %d of %d of broadcast %d taken over by node %s: its node %s is not live (dead, stopped or gone), or is draining",
				deref(r.ShardIndex), deref(r.ShardTotal), deref(r.ShardGroup), me, was)})
	}
	if len(ids) == 0 {
		return nil
	}
	if err := tx.Exec(`UPDATE `+s.jobsByID()+` SET target_node = ? WHERE id IN ?`, l.place.nodeID, ids).Error; err != nil {
		return fmt.Errorf("take over broadcast shards %v: %w", ids, err)
	}
	return s.insertJobLogs(tx, logs)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
