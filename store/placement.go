package store

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Placement: a job may require node tags (jobs.required_tags, else its
// schedule's, else its definition's; NULL or '' is not set). The claim
// reads them with what it reads for the limits anyway (the definition's
// with its queue and max_running, the schedule's with its name), so a
// job that requires none costs no statement more. A picked job whose
// tags this node lacks is not claimed:
//
//   - when another live node that runs jobs and is not draining has them
//     all, the job is left pending for that node, silently, and its
//     definition, schedule or row is left out of this claim's next pick;
//   - when none has, the job waits with the reason (LimitPlacement), as a
//     limit's jobs do: in its log, chime_jobs_held_total{kind="placement"};
//   - a required_tags value that does not parse (plain SQL may write
//     anything) makes the job wait with the reason (LimitInvalid).
//
// The live nodes are read only when a picked job's tags are not this
// node's.

// placeElsewhere is admit's kind for a row left to another node: neither
// claimed nor held.
const placeElsewhere = "elsewhere"

// placement is the tag state of one claim.
type placement struct {
	tags      []string         // the claiming node's
	nodeID    string           // the claiming node's id
	schedTags map[int64]string // schedules' required_tags overrides
	parsed    map[string]parsedTags
	others    map[string][]string // the other live, undrained nodes that run jobs: their tags
	read      bool                // others read
	retarget  map[int64]string    // shards this node takes over: their target until now
}

type parsedTags struct {
	tags []string
	err  error
}

func newPlacement(nodeID string, tags []string) placement {
	return placement{nodeID: nodeID, tags: tags, schedTags: map[int64]string{}, parsed: map[string]parsedTags{}}
}

// parse reads a required_tags value once per claim.
func (p *placement) parse(raw string) parsedTags {
	if v, ok := p.parsed[raw]; ok {
		return v
	}
	tags, err := models.ParseTags(raw)
	v := parsedTags{tags, err}
	p.parsed[raw] = v
	return v
}

// rowTags is what r requires and where it came from ("job", "schedule",
// "definition"); "" when nothing.
func (l *claimLimits) rowTags(r *models.Job) (string, string) {
	if r.RequiredTags != nil && *r.RequiredTags != "" {
		return *r.RequiredTags, "job"
	}
	if r.ScheduleID != nil {
		if t := l.place.schedTags[*r.ScheduleID]; t != "" {
			return t, "schedule"
		}
	}
	if d := l.defs[r.JobDefinitionID]; d != nil && d.tags != "" {
		return d.tags, "definition"
	}
	return "", ""
}

// fits says whether this node may take r: no tags required, or all its
// own; a broadcast's shard only on its own node.
func (l *claimLimits) fits(r *models.Job) bool {
	if r.TargetNode != nil && *r.TargetNode != "" {
		return *r.TargetNode == l.place.nodeID
	}
	if d := l.defs[r.JobDefinitionID]; d != nil && d.bcast && r.ShardTotal == nil {
		return false // a seed: expanding it needs the live nodes
	}
	raw, _ := l.rowTags(r)
	if raw == "" {
		return true
	}
	v := l.place.parse(raw)
	return v.err == nil && len(models.MissingTags(v.tags, l.place.tags)) == 0
}

// preparePlacement reads the other live nodes' tags when a row of rows
// requires tags this node lacks, once per claim.
func (s *Store) preparePlacement(tx *gorm.DB, l *claimLimits, rows []models.Job) error {
	if l.place.read {
		return nil
	}
	need := false
	for i := range rows {
		if !l.fits(&rows[i]) {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	return s.readLiveNodes(tx, l)
}

// readLiveNodes reads the other live, undrained nodes that run jobs, with
// their tags (a row whose tags do not parse has none).
func (s *Store) readLiveNodes(tx *gorm.DB, l *claimLimits) error {
	var nodes []struct {
		ID    string `gorm:"column:id"`
		Tags  string `gorm:"column:tags"`
		Roles string `gorm:"column:roles"`
	}
	if err := tx.Raw(`SELECT id, tags, roles FROM nodes WHERE status = ? AND drain = '' AND id <> ?`,
		chimedb.NodeAlive, l.place.nodeID).Scan(&nodes).Error; err != nil {
		return fmt.Errorf("read the tags of live nodes: %w", err)
	}
	l.place.others = map[string][]string{}
	for _, n := range nodes {
		if !strings.Contains(n.Roles, "worker") {
			continue // runs no jobs
		}
		tags, _ := models.ParseTags(n.Tags)
		l.place.others[n.ID] = tags
	}
	l.place.read = true
	return nil
}

// placeCheck says why this node does not take r, if it does not: held
// (LimitPlacement, LimitInvalid) or left to another node (placeElsewhere).
func (l *claimLimits) placeCheck(r *models.Job) (reason, kind, by string) {
	if r.TargetNode != nil && *r.TargetNode != "" {
		return l.shardCheck(r)
	}
	raw, from := l.rowTags(r)
	if raw == "" {
		return "", "", ""
	}
	v := l.place.parse(raw)
	if v.err != nil {
		return fmt.Sprintf("waiting: the %s's required_tags cannot be read: %v", from, v.err), chimedb.LimitInvalid, from
	}
	if len(models.MissingTags(v.tags, l.place.tags)) == 0 {
		return "", "", ""
	}
	for _, other := range l.place.others {
		if len(models.MissingTags(v.tags, other)) == 0 {
			return "", placeElsewhere, from
		}
	}
	return fmt.Sprintf("waiting: no live node that runs jobs has all the tags %q its %s requires (node.tags; draining nodes do not count)",
		strings.Join(v.tags, ","), from), chimedb.LimitPlacement, from
}
