package chimedbtest

import (
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func placementMethods() []method {
	return []method{
		{"Placement", placementCases},
		{"AdminQueries.SetNodeDrain", setNodeDrainCases},
		{"ClusterStore.SyncDrain", syncDrainCases},
	}
}

func (e *env) taggedNode(id, tags, roles string) {
	e.t.Helper()
	require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: id, Hostname: "host", PID: 1, Version: "test",
		Roles: roles, Tags: tags}))
}

func requires(tags string) func(d *models.JobDefinition) {
	return func(d *models.JobDefinition) { d.RequiredTags = tags }
}

func heldKinds(res *chimedb.ClaimResult) map[int64]chimedb.LimitedJob {
	out := map[int64]chimedb.LimitedJob{}
	for _, h := range res.Limited {
		out[h.ID] = h
	}
	return out
}

var placementCases = []tcase{
	{"a node claims only jobs whose required tags it has; others are left to the node that has them", func(e *env) {
		e.taggedNode("plain", "", "worker")
		e.taggedNode("gpu", "gpu,zone:eu", "worker")
		gpu := e.definition(requires("gpu"))
		any := e.definition()
		g1, a1 := e.job(gpu.ID), e.job(any.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "plain", Limit: 10})
		require.Equal(e.t, []int64{a1.ID}, claimedIDs(res.Jobs))
		require.Empty(e.t, res.Limited, "another live node has the tags: no reason to show")
		require.Equal(e.t, 1, res.Selected)
		require.Equal(e.t, models.JobPending, e.get(g1.ID).Status)
		res = e.claim(&chimedb.ClaimParams{NodeID: "gpu", NodeTags: []string{"gpu", "zone:eu"}, Limit: 10})
		require.Equal(e.t, []int64{g1.ID}, claimedIDs(res.Jobs))
	}},
	{"a job no live node can take waits with the reason; draining and scheduler-only nodes do not count", func(e *env) {
		e.taggedNode("plain", "", "worker")
		e.taggedNode("drained", "licence", "worker")
		e.taggedNode("sched", "licence", "scheduler")
		_, err := e.admin.SetNodeDrain(e.ctx, "drained", true)
		require.NoError(e.t, err)
		d := e.definition(requires("licence"))
		j := e.job(d.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "plain", Limit: 10})
		require.Empty(e.t, res.Jobs)
		h := heldKinds(res)[j.ID]
		require.Equal(e.t, chimedb.LimitPlacement, h.Kind)
		require.Contains(e.t, h.Reason, `"licence"`)
		require.Equal(e.t, 0, res.Selected)
	}},
	{"a schedule's and a job's own required tags override the definition's; '' keeps it", func(e *env) {
		e.taggedNode("a", "a", "worker")
		e.taggedNode("b", "b", "worker")
		d := e.definition(requires("a"))
		toB := "b"
		empty := ""
		s := e.schedule(d.ID, func(s *models.Schedule) { s.RequiredTags = &toB })
		viaSched := e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID })
		own := e.job(d.ID, func(j *models.Job) { j.RequiredTags = &toB })
		kept := e.job(d.ID, func(j *models.Job) { j.RequiredTags = &empty })
		res := e.claim(&chimedb.ClaimParams{NodeID: "b", NodeTags: []string{"b"}, Limit: 10})
		require.ElementsMatch(e.t, []int64{viaSched.ID, own.ID}, claimedIDs(res.Jobs))
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", NodeTags: []string{"a"}, Limit: 10})
		require.Equal(e.t, []int64{kept.ID}, claimedIDs(res.Jobs))
	}},
	{"required_tags written by SQL that do not parse hold the job with the reason, never fail the claim", func(e *env) {
		d := e.definition()
		ok := e.definition()
		e.exec(`UPDATE job_definitions SET required_tags = ? WHERE id = ?`, "gpu, my tag", d.ID)
		bad, long := e.job(d.ID), e.job(ok.ID)
		// The longest the column holds on every database (SQLite keeps
		// longer: models.ParseTags refuses those too, see its test).
		e.exec(`UPDATE jobs SET required_tags = ? WHERE id = ?`, strings.Repeat("x", models.MaxTagsText), long.ID)
		fine := e.job(ok.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "n1", NodeTags: []string{"gpu"}, Limit: 10})
		require.Equal(e.t, []int64{fine.ID}, claimedIDs(res.Jobs))
		h := heldKinds(res)
		require.Equal(e.t, chimedb.LimitInvalid, h[bad.ID].Kind)
		require.Contains(e.t, h[bad.ID].Reason, "holds ' '")
		require.Equal(e.t, chimedb.LimitInvalid, h[long.ID].Kind)
		require.Contains(e.t, h[long.ID].Reason, "more than 64")
		require.Less(e.t, len(h[long.ID].Reason), 300)
	}},
	{"jobs left to other nodes do not take the claim's places: it picks again past them", func(e *env) {
		e.taggedNode("gpu", "gpu", "worker")
		gpu := e.definition(requires("gpu"))
		any := e.definition()
		for range 3 {
			e.job(gpu.ID)
		}
		want := []int64{e.job(any.ID).ID, e.job(any.ID).ID}
		res := e.claim(&chimedb.ClaimParams{NodeID: "plain", Limit: 2})
		require.Equal(e.t, want, claimedIDs(res.Jobs))
	}},
}

var setNodeDrainCases = []tcase{
	{"drains and undrains a node; drained stays drained; an unknown id is ErrNotFound", func(e *env) {
		e.node("n1")
		n, err := e.admin.SetNodeDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		require.Equal(e.t, models.NodeDraining, n.Drain)
		e.exec(`UPDATE nodes SET drain = ? WHERE id = ?`, models.NodeDrained, "n1")
		n, err = e.admin.SetNodeDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		require.Equal(e.t, models.NodeDrained, n.Drain, "asking again does not undo drained")
		n, err = e.admin.SetNodeDrain(e.ctx, "n1", false)
		require.NoError(e.t, err)
		require.Empty(e.t, n.Drain)
		_, err = e.admin.SetNodeDrain(e.ctx, "nobody", true)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		_, err = e.admin.SetNodeDrain(e.ctx, strings.Repeat("x", 10000), false)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
	{"a node re-registering keeps its drain and takes its new tags", func(e *env) {
		e.taggedNode("n1", "a", "worker")
		_, err := e.admin.SetNodeDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		e.taggedNode("n1", "a,b", "worker")
		n := e.nodeRow("n1")
		require.Equal(e.t, models.NodeDraining, n.Drain)
		require.Equal(e.t, "a,b", n.Tags)
		require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: "n1", Roles: "worker", Drain: ""}))
		require.Equal(e.t, models.NodeDraining, e.nodeRow("n1").Drain, "an existing row keeps its drain whatever the node says")
	}},
	{"a draining node whose row was deleted writes it again still draining at its next heartbeat", func(e *env) {
		e.taggedNode("n1", "a", "worker")
		_, err := e.admin.SetNodeDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		e.exec(`DELETE FROM nodes WHERE id = ?`, "n1")
		prev, err := e.Cluster.HeartbeatNode(e.ctx, &chimedb.RegisterNodeParams{ID: "n1", Roles: "worker", Tags: "a", Drain: models.NodeDraining})
		require.NoError(e.t, err)
		require.Empty(e.t, prev, "the row had gone")
		n := e.nodeRow("n1")
		require.Equal(e.t, models.NodeDraining, n.Drain)
		require.Equal(e.t, chimedb.NodeAlive, n.Status)
		require.Equal(e.t, "a", n.Tags)
	}},
}

var syncDrainCases = []tcase{
	{"reads the drain; marks drained only when draining and idle; ErrNotFound for a gone row", func(e *env) {
		e.node("n1")
		d, err := e.Cluster.SyncDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		require.Empty(e.t, d, "not draining: idle changes nothing")
		_, err = e.admin.SetNodeDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		d, err = e.Cluster.SyncDrain(e.ctx, "n1", false)
		require.NoError(e.t, err)
		require.Equal(e.t, models.NodeDraining, d)
		d, err = e.Cluster.SyncDrain(e.ctx, "n1", true)
		require.NoError(e.t, err)
		require.Equal(e.t, models.NodeDrained, d)
		_, err = e.Cluster.SyncDrain(e.ctx, "gone", true)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound, "a gone row is not an undrain")
	}},
}

func broadcastMethods() []method {
	return []method{{"Broadcast", broadcastCases}}
}

var broadcastCases = []tcase{
	{"a broadcast job becomes one shard per live node with its tags; each is claimed only by its node", func(e *env) {
		e.taggedNode("a", "x", "worker")
		e.taggedNode("b", "x,y", "worker")
		e.taggedNode("c", "", "worker")
		e.taggedNode("s", "x", "scheduler")
		d := e.definition(requires("x"), func(d *models.JobDefinition) { d.Broadcast = true })
		seed := e.job(d.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "c", Limit: 10})
		require.Empty(e.t, res.Jobs, "c lacks x")
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", NodeTags: []string{"x"}, Limit: 10})
		require.Equal(e.t, []int64{seed.ID}, claimedIDs(res.Jobs), "the seed is a's shard")
		got := e.get(seed.ID)
		require.Equal(e.t, 0, *got.ShardIndex)
		require.Equal(e.t, 2, *got.ShardTotal)
		require.Equal(e.t, seed.ID, *got.ShardGroup)
		require.Equal(e.t, "a", *got.TargetNode)
		require.Empty(e.t, e.claim(&chimedb.ClaimParams{NodeID: "c", Limit: 10}).Jobs, "b's shard is b's alone")
		res = e.claim(&chimedb.ClaimParams{NodeID: "b", NodeTags: []string{"x", "y"}, Limit: 10})
		require.Len(e.t, res.Jobs, 1)
		other := res.Jobs[0]
		require.Equal(e.t, 1, *other.ShardIndex)
		require.Equal(e.t, 2, *other.ShardTotal)
		require.Equal(e.t, seed.ID, *other.ShardGroup)
		require.Nil(e.t, other.ScheduleID)
		e.hasLog(seed.ID, "broadcast: one job per live node, 2 in all")
	}},
	{"a shard whose node is dead, stopped, draining or gone is taken over by a live node with its tags", func(e *env) {
		for _, id := range []string{"a", "b", "c", "d", "f"} {
			e.taggedNode(id, "x", "worker")
		}
		e.taggedNode("plain", "", "worker")
		d := e.definition(requires("x"), func(d *models.JobDefinition) { d.Broadcast = true })
		seed := e.job(d.ID)
		require.Equal(e.t, []int64{seed.ID}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "a", NodeTags: []string{"x"}, Limit: 10}).Jobs))
		shard := map[string]int64{}
		group, err := e.admin.ListJobs(e.ctx, &chimedb.AdminListParams{JobDefinitionID: d.ID, Limit: 100})
		require.NoError(e.t, err)
		require.Len(e.t, group, 5)
		for _, j := range group {
			shard[*j.TargetNode] = j.ID
		}
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "b", chimedb.NodeDead))
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "c", chimedb.NodeStopped))
		_, err = e.admin.SetNodeDrain(e.ctx, "d", true)
		require.NoError(e.t, err)
		e.exec(`DELETE FROM nodes WHERE id = ?`, "f")

		res := e.claim(&chimedb.ClaimParams{NodeID: "plain", Limit: 10})
		require.Empty(e.t, res.Jobs, "plain lacks x")
		require.Empty(e.t, res.Limited, "a live node with x can take them over: no reason to show")
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", NodeTags: []string{"x"}, Limit: 10})
		require.ElementsMatch(e.t, []int64{shard["b"], shard["c"], shard["d"], shard["f"]}, claimedIDs(res.Jobs))
		for _, j := range res.Jobs {
			require.Equal(e.t, "a", *j.TargetNode, "the claimed row says its new node")
		}
		for node, id := range shard {
			got := e.get(id)
			require.Equal(e.t, "a", *got.TargetNode)
			require.Equal(e.t, 5, *got.ShardTotal)
			require.Equal(e.t, seed.ID, *got.ShardGroup)
			if node != "a" {
				e.hasLog(id, "taken over by node a: its node "+node+" is not live")
			}
		}
	}},
	{"a shard its dead node held goes back to pending with the recovery, and another node takes it over", func(e *env) {
		e.taggedNode("a", "", "worker")
		e.taggedNode("b", "", "worker")
		d := e.definition(func(d *models.JobDefinition) { d.Broadcast = true })
		seed := e.job(d.ID)
		require.Len(e.t, e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}).Jobs, 1)
		res := e.claim(&chimedb.ClaimParams{NodeID: "b", Limit: 10})
		require.Len(e.t, res.Jobs, 1)
		theirs := res.Jobs[0].ID
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "b", chimedb.NodeDead))
		rec, err := e.Cluster.RecoverNode(e.ctx, &chimedb.RecoverNodeParams{NodeID: "b", Now: e.now()})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{theirs}, rec.Released)
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Equal(e.t, []int64{theirs}, claimedIDs(res.Jobs))
		got := e.get(theirs)
		require.Equal(e.t, "a", *got.TargetNode)
		require.Equal(e.t, 1, *got.ShardIndex)
		require.Equal(e.t, seed.ID, *got.ShardGroup)
	}},
	{"a shard's retry stays on its live node; one a draining node hands back is taken over", func(e *env) {
		e.taggedNode("a", "", "worker")
		e.taggedNode("b", "", "worker")
		d := e.definition(func(d *models.JobDefinition) { d.Broadcast = true; d.MaxAttempts = 3 })
		e.job(d.ID, func(j *models.Job) { j.Priority = 9 })
		require.Len(e.t, e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}).Jobs, 1)
		res := e.claim(&chimedb.ClaimParams{NodeID: "b", Limit: 10})
		require.Len(e.t, res.Jobs, 1)
		theirs := res.Jobs[0].ID
		require.Equal(e.t, 9, e.get(theirs).Priority, "a shard keeps the seed's priority")
		e.toRunning(theirs, "b")
		require.Equal(e.t, []int64{theirs}, e.complete("b", chimedb.JobOutcome{ID: theirs, Status: models.JobPending, RunAt: e.now(), Error: ptr("boom")}))
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Empty(e.t, res.Jobs, "b is live: its shard's retry is b's")
		require.Empty(e.t, res.Limited)
		require.Equal(e.t, []int64{theirs}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "b", Limit: 10}).Jobs))

		e.toRunning(theirs, "b")
		_, err := e.admin.SetNodeDrain(e.ctx, "b", true)
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{theirs}, e.complete("b", chimedb.JobOutcome{ID: theirs, Status: models.JobPending, HandBack: true, RunAt: e.now()}))
		require.Equal(e.t, []int64{theirs}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}).Jobs))
		got := e.get(theirs)
		require.Equal(e.t, "a", *got.TargetNode)
		require.Equal(e.t, 1, *got.ShardIndex)
		e.hasLog(theirs, "taken over by node a: its node b is not live")
	}},
	{"a shard a limit holds back is not taken over: it keeps its node until a claim admits it", func(e *env) {
		e.taggedNode("a", "", "worker")
		e.taggedNode("b", "", "worker")
		d := e.definition(func(d *models.JobDefinition) { d.Broadcast = true; d.MaxRunning = i64(1) })
		seed := e.job(d.ID)
		require.Equal(e.t, []int64{seed.ID}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}).Jobs))
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "b", chimedb.NodeDead))
		res := e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Empty(e.t, res.Jobs)
		require.Len(e.t, res.Limited, 1)
		require.Equal(e.t, chimedb.LimitDefinition, res.Limited[0].Kind)
		other := res.Limited[0].ID
		require.Equal(e.t, "b", *e.get(other).TargetNode)
		e.exec(`UPDATE jobs SET status = ? WHERE id = ?`, models.JobSucceeded, seed.ID)
		require.Equal(e.t, []int64{other}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}).Jobs))
		require.Equal(e.t, "a", *e.get(other).TargetNode)
	}},
	{"a shard no live node can take over waits with the reason; a broadcast no node can take waits too", func(e *env) {
		e.taggedNode("a", "", "worker")
		e.taggedNode("e", "y", "worker")
		e.taggedNode("f", "y", "worker")
		d := e.definition(requires("y"), func(d *models.JobDefinition) { d.Broadcast = true })
		seed := e.job(d.ID)
		require.Equal(e.t, []int64{seed.ID}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "e", NodeTags: []string{"y"}, Limit: 10}).Jobs))
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "e", chimedb.NodeStopped))
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "f", chimedb.NodeDead))
		res := e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Empty(e.t, res.Jobs)
		require.Len(e.t, res.Limited, 1)
		require.Equal(e.t, chimedb.LimitPlacement, res.Limited[0].Kind)
		require.Contains(e.t, res.Limited[0].Reason, "shard 1 of 2 of broadcast")
		require.Contains(e.t, res.Limited[0].Reason, `its node f is not live, or is draining, and no live node that runs jobs has the tags "y"`)
		require.Equal(e.t, "f", *e.get(res.Limited[0].ID).TargetNode)

		lic := e.definition(requires("licence"), func(d *models.JobDefinition) { d.Broadcast = true })
		j := e.job(lic.ID)
		res = e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Equal(e.t, chimedb.LimitPlacement, heldKinds(res)[j.ID].Kind)
		require.Nil(e.t, e.get(j.ID).ShardTotal, "not expanded while no node can take it")
	}},
}

func definitionRateMethods() []method {
	return []method{{"DefinitionRate", definitionRateCases}}
}

var definitionRateCases = []tcase{
	{"a definition's rate limit spaces its starts, cluster-wide, and holds the rest with the reason", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.RateLimit, d.RatePeriodMs = i64(1), i64(3_600_000) })
		other := e.definition()
		j1, j2 := e.job(d.ID), e.job(d.ID)
		free := e.job(other.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.ElementsMatch(e.t, []int64{j1.ID, free.ID}, claimedIDs(res.Jobs))
		h := heldKinds(res)[j2.ID]
		require.Equal(e.t, chimedb.LimitDefinitionRate, h.Kind)
		require.Contains(e.t, h.Reason, "starts at most 1 jobs per 3600000 ms")
		require.Greater(e.t, res.RetryIn, 59*time.Minute)
		require.Empty(e.t, e.claim(&chimedb.ClaimParams{NodeID: "b", Limit: 10}).Jobs, "another node is held as well")
		e.exec(`UPDATE job_definitions SET rate_tat_us = NULL WHERE id = ?`, d.ID)
		require.Equal(e.t, []int64{j2.ID}, claimedIDs(e.claim(&chimedb.ClaimParams{NodeID: "b", Limit: 10}).Jobs))
	}},
	{"a queue's and a definition's rates are both checked before either is taken", func(e *env) {
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "q", RateLimit: i64(1), RatePeriodMs: i64(3_600_000)}))
		d := e.definition(e.inQueue("q"), func(d *models.JobDefinition) { d.RateLimit, d.RatePeriodMs = i64(1), i64(3_600_000) })
		e.exec(`UPDATE job_definitions SET rate_tat_us = ? WHERE id = ?`, int64(1)<<60, d.ID)
		j := e.job(d.ID)
		res := e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10})
		require.Equal(e.t, chimedb.LimitDefinitionRate, heldKinds(res)[j.ID].Kind)
		q, err := e.admin.GetQueue(e.ctx, "q")
		require.NoError(e.t, err)
		require.Nil(e.t, q.RateTatUs, "the queue's start was not used by a start the definition refused")
	}},
	{"a bad rate written by SQL makes the definition invalid: its jobs wait with the reason", func(e *env) {
		d := e.definition()
		e.exec(`UPDATE job_definitions SET rate_limit = 1000000, rate_period_ms = 1 WHERE id = ?`, d.ID)
		j := e.job(d.ID)
		h := heldKinds(e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}))[j.ID]
		require.Equal(e.t, chimedb.LimitInvalid, h.Kind)
		require.Contains(e.t, h.Reason, "more than one start per microsecond")
		e.exec(`UPDATE job_definitions SET rate_limit = 5, rate_period_ms = NULL WHERE id = ?`, d.ID)
		h = heldKinds(e.claim(&chimedb.ClaimParams{NodeID: "a", Limit: 10}))[j.ID]
		require.Contains(e.t, h.Reason, "must be set together")
	}},
}
