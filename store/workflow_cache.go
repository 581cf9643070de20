package store

import (
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// graphTTL bounds how long a cached graph is trusted without reading it
// again. Every change chime makes to a workflow moves workflows.updated_at,
// which the run's lock reads, so those reach the next decision at once;
// a step or edge an admin adds or changes by SQL without touching the
// workflow row is seen within graphTTL.
const graphTTL = 30 * time.Second

// maxCachedGraphs bounds the cache; past it, the cache starts again empty
// (a node deciding runs of more workflows than this at once reads their
// graphs as it did before the cache).
const maxCachedGraphs = 1024

// cachedGraph is a workflow's graph as one decision read it. Its slices
// are shared by the decisions that use it: they only read them.
type cachedGraph struct {
	stamp  string // workflows.updated_at as the lock's row read it
	loaded time.Time
	wf     models.Workflow
	steps  []models.WorkflowStep
	edges  []models.WorkflowEdge
	// bad says why the graph cannot be run ("" when it can).
	bad string
	// in and out are the edges into and out of each step.
	in, out map[int64][]models.WorkflowEdge
	byID    map[int64]*models.WorkflowStep
}

// graphCache keeps workflows' graphs by id, each valid while the
// workflow's updated_at is the one it was read with: a decision reads the
// stamp with the run's lock, in the same statement, instead of three
// reads of the workflow, its steps and its edges.
type graphCache struct {
	mu sync.Mutex
	m  map[int64]*cachedGraph
}

func (c *graphCache) get(id int64, stamp string, now time.Time) *cachedGraph {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.m[id]
	if g == nil || g.stamp != stamp || now.Sub(g.loaded) > graphTTL || now.Before(g.loaded) {
		return nil
	}
	return g
}

func (c *graphCache) put(id int64, g *cachedGraph) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedGraphs {
		c.m = make(map[int64]*cachedGraph)
	}
	c.m[id] = g
}

// readGraph reads workflow id's graph inside tx; a workflow gone, a
// cycle or an edge to another workflow's step comes back with bad set.
func readGraph(tx *gorm.DB, id int64) (*cachedGraph, error) {
	g := &cachedGraph{}
	var wfs []models.Workflow
	if err := tx.Where("id = ?", id).Limit(1).Find(&wfs).Error; err != nil {
		return nil, fmt.Errorf("read workflow %d: %w", id, err)
	}
	if len(wfs) == 0 {
		g.bad = fmt.Sprintf("workflow %d does not exist", id)
		return g, nil
	}
	g.wf = wfs[0]
	if err := tx.Where("workflow_id = ?", id).Order("id").Limit(chimedb.MaxWorkflowSteps + 1).Find(&g.steps).Error; err != nil {
		return nil, fmt.Errorf("read steps of workflow %d: %w", id, err)
	}
	if err := tx.Where("workflow_id = ?", id).Order("id").Limit(chimedb.MaxWorkflowEdges + 1).Find(&g.edges).Error; err != nil {
		return nil, fmt.Errorf("read edges of workflow %d: %w", id, err)
	}
	if err := chimedb.CheckGraph(g.steps, g.edges); err != nil {
		g.bad = fmt.Sprintf("workflow %q cannot run: %v", g.wf.Name, err)
		return g, nil
	}
	g.byID = make(map[int64]*models.WorkflowStep, len(g.steps))
	for i := range g.steps {
		g.byID[g.steps[i].ID] = &g.steps[i]
	}
	g.in = make(map[int64][]models.WorkflowEdge, len(g.steps))
	g.out = make(map[int64][]models.WorkflowEdge, len(g.steps))
	for _, e := range g.edges {
		g.in[e.ToStepID] = append(g.in[e.ToStepID], e)
		g.out[e.FromStepID] = append(g.out[e.FromStepID], e)
	}
	return g, nil
}

// graphOf returns workflow id's graph: the cached one when stamp (the
// workflow's updated_at read with the run's lock; "" when not read) is
// the one it was read with, else read inside tx and cached.
func (s *Store) graphOf(tx *gorm.DB, id int64, stamp string) (*cachedGraph, error) {
	now := time.Now()
	if stamp != "" {
		if g := s.graphs.get(id, stamp, now); g != nil {
			return g, nil
		}
	}
	g, err := readGraph(tx, id)
	if err != nil {
		return nil, err
	}
	if stamp != "" && g.bad == "" {
		g.stamp, g.loaded = stamp, now
		s.graphs.put(id, g)
	}
	return g, nil
}
