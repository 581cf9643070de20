package clustertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// shardEcho is a shell command that prints what the job was told of its
// shard: its result then says it, in the row.
const shardEcho = `echo "$CHIME_SHARD_INDEX/$CHIME_SHARD_TOTAL"`

// Three real nodes with tags run broadcasts, a drain and a node loss:
//
//   - a broadcast becomes one shard per live node (and one requiring the
//     gpu tag only on the node that has it), each run on its node and told
//     a distinct index of the same total, the group all succeeded;
//   - `chime node drain p2`, served by p1's API while p2 runs a long job:
//     p2 stops claiming (the jobs written meanwhile all run on the others,
//     and one only p2 could take waits with the placement reason), finishes
//     its job, shows drained; `chime node undrain p2` lets it claim again,
//     and the job that waited runs on it, claimed only after the undrain;
//   - p3 is killed with SIGKILL while it runs its shard of a broadcast: the
//     shard is recovered and taken over by a live node, and the group
//     succeeds with every index run once to success.
//
// CHIME_CLUSTERTEST_DRAIN_SLEEP sets the drained node's long job (3s).
func TestDrainAndBroadcast(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { drainAndBroadcast(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { drainAndBroadcast(t, testdb.CreatePostgresDatabase(t)) })
}

var drainSleep = envDuration("CHIME_CLUSTERTEST_DRAIN_SLEEP", 3*time.Second)

// shardRow is what the checks need of a broadcast's job.
type shardRow struct {
	ID         int64
	Status     models.JobStatus
	NodeID     string
	TargetNode string
	ShardIndex int
	ShardTotal int
	Result     string
}

func shards(t *testing.T, st *store.Store, group int64) []shardRow {
	t.Helper()
	var rows []shardRow
	require.NoError(t, st.DB().Raw(`SELECT id, status, node_id, COALESCE(target_node, '') AS target_node,
		COALESCE(shard_index, -1) AS shard_index, COALESCE(shard_total, -1) AS shard_total, COALESCE(result, '') AS result
		FROM jobs WHERE shard_group = ? ORDER BY shard_index`, group).Scan(&rows).Error)
	return rows
}

// groupDone says whether every shard of group has finished.
func groupDone(t *testing.T, st *store.Store, group int64) bool {
	rows := shards(t, st, group)
	if len(rows) == 0 {
		return false
	}
	for _, r := range rows {
		if r.Status != models.JobSucceeded && r.Status != models.JobFailed && r.Status != models.JobStopped {
			return false
		}
	}
	return true
}

// checkGroup asserts that group has one succeeded shard per index of
// total, each run on its target and told its index and total.
func checkGroup(t *testing.T, st *store.Store, group int64, total int) []shardRow {
	t.Helper()
	rows := shards(t, st, group)
	require.Len(t, rows, total, "shards of broadcast %d", group)
	for i, r := range rows {
		require.Equal(t, i, r.ShardIndex, "shard indexes are 0 .. total-1, each once")
		require.Equal(t, total, r.ShardTotal)
		require.Equal(t, models.JobSucceeded, r.Status, "shard %d", i)
		require.Equal(t, r.TargetNode, r.NodeID, "shard %d ran on its target", i)
		require.Equal(t, fmt.Sprintf("%d/%d", i, total), strings.TrimSpace(r.Result), "what shard %d was told", i)
	}
	return rows
}

func jobLogged(t *testing.T, st *store.Store, id int64, like string) bool {
	return count(t, st, "SELECT COUNT(*) FROM job_logs WHERE job_id = ? AND message LIKE ?", id, like) > 0
}

// logged says whether p's log holds a JSON line whose msg is msg.
func (p *nodeProc) logged(msg string) bool {
	return p.logField(msg, "msg") != ""
}

// logField returns field of p's first JSON log line whose msg is msg.
func (p *nodeProc) logField(msg, field string) string {
	sc := bufio.NewScanner(strings.NewReader(p.out.String()))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != msg {
			continue
		}
		v, _ := line[field].(string)
		return v
	}
	return ""
}

// cli runs an admin command of bin against the API at url.
func cli(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--api-url", url, "--output", "json")...)
	cmd.Env = append(os.Environ(), "CHIME_API_TOKEN=clustertest-token-0123456789")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chime %s: %s%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// cliRow runs an admin command that answers with one row.
func cliRow(t *testing.T, bin, url string, args ...string) map[string]any {
	t.Helper()
	out := cli(t, bin, url, args...)
	var row map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &row), "chime %s: %s", strings.Join(args, " "), out)
	return row
}

func drainAndBroadcast(t *testing.T, dsn string) {
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	db := st.DB()

	def := func(name string, mods ...func(*models.JobDefinition)) models.JobDefinition {
		d := models.JobDefinition{Name: name, TaskType: "shell", MaxAttempts: 2, RequestsRecovery: true, NotifyOn: models.NotifyNever,
			Queue: models.DefaultQueue, DefaultParams: models.JSON(`{"command":` + jsonString(shardEcho) + `}`)}
		for _, m := range mods {
			m(&d)
		}
		require.NoError(t, db.Create(&d).Error)
		return d
	}
	broadcast := func(d *models.JobDefinition) { d.Broadcast = true }
	everywhere := def("everywhere", broadcast)
	gpu := def("gpu-only", broadcast, func(d *models.JobDefinition) { d.RequiredTags = "gpu" })
	slow := def("slow-everywhere", broadcast, func(d *models.JobDefinition) {
		d.DefaultParams = models.JSON(`{"command":` + jsonString("sleep 3; "+shardEcho) + `}`)
	})
	sleepy := def("sleepy", func(d *models.JobDefinition) {
		d.TaskType = "sleep"
		d.DefaultParams = models.JSON(`{"duration":"10ms"}`)
	})

	nodes := map[string]*nodeProc{
		"p1": startNode(t, bin, dsn, "p1", "CHIME_NODE_TAGS=slot:1"),
		"p2": startNode(t, bin, dsn, "p2", "CHIME_NODE_TAGS=slot:2"),
		"p3": startNode(t, bin, dsn, "p3", "CHIME_NODE_TAGS=gpu,slot:3"),
	}
	defer stopAll(t, st, nodes)
	waitFor(t, 30*time.Second, "three live nodes", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM nodes WHERE status = 'alive'") == 3
	})
	var api string
	waitFor(t, 30*time.Second, "p1's API", func() bool {
		api = nodes["p1"].logField("api listening", "addr")
		return api != ""
	})
	api = "http://" + api
	seed := func(d models.JobDefinition) int64 {
		j := models.Job{JobDefinitionID: d.ID, Status: models.JobPending, MaxAttempts: d.MaxAttempts}
		require.NoError(t, db.Select("job_definition_id", "status", "max_attempts").Create(&j).Error)
		return j.ID
	}

	// Broadcasts: one shard per live node, or per node with the tag.
	all, g := seed(everywhere), seed(gpu)
	waitFor(t, 30*time.Second, "the broadcasts to finish", func() bool { return groupDone(t, st, all) && groupDone(t, st, g) })
	rows := checkGroup(t, st, all, 3)
	var ran []string
	for _, r := range rows {
		ran = append(ran, r.NodeID)
	}
	slices.Sort(ran)
	require.Equal(t, []string{"p1", "p2", "p3"}, ran, "one shard on each node")
	require.Equal(t, "p3", checkGroup(t, st, g, 1)[0].NodeID, "only p3 has the gpu tag")

	// Drain p2, by p1's API, while it runs a long job only it can take.
	long := models.Job{JobDefinitionID: sleepy.ID, Status: models.JobPending, MaxAttempts: 1, RequiredTags: ptr("slot:2"),
		Params: models.JSON(`{"duration":"` + drainSleep.String() + `"}`)}
	require.NoError(t, db.Select("job_definition_id", "status", "max_attempts", "required_tags", "params").Create(&long).Error)
	waitFor(t, 30*time.Second, "p2 to run the long job", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id = ? AND status = 'running' AND node_id = 'p2'", long.ID) == 1
	})
	require.Equal(t, models.NodeDraining, cliRow(t, bin, api, "node", "drain", "p2")["drain"])
	waitFor(t, 10*time.Second, "p2 to see its drain", func() bool {
		return nodes["p2"].logged("draining: this node claims no more jobs and finishes those it runs")
	})
	// Written once p2 knows: none of them may run there. The pinned one
	// waits, with the reason the other nodes' claims give.
	pinned := models.Job{JobDefinitionID: sleepy.ID, Status: models.JobPending, MaxAttempts: 1, RequiredTags: ptr("slot:2")}
	require.NoError(t, db.Select("job_definition_id", "status", "max_attempts", "required_tags").Create(&pinned).Error)
	var during []int64
	for range 20 {
		j := models.Job{JobDefinitionID: sleepy.ID, Status: models.JobPending, MaxAttempts: 1}
		require.NoError(t, db.Select("job_definition_id", "status", "max_attempts").Create(&j).Error)
		during = append(during, j.ID)
	}
	drainedIn := waitFor(t, 30*time.Second, "p2 drained", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM nodes WHERE id = 'p2' AND drain = 'drained'") == 1
	})
	require.Equal(t, int64(1), count(t, st, "SELECT COUNT(*) FROM jobs WHERE id = ? AND status = 'succeeded' AND node_id = 'p2'", long.ID),
		"drained only once its job had finished, there")
	require.Contains(t, cli(t, bin, api, "nodes"), `"drained"`)
	waitFor(t, 30*time.Second, "the jobs written during the drain to run elsewhere", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND status = 'succeeded'", during) == int64(len(during))
	})
	require.Zero(t, count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND node_id = 'p2'", during), "a draining node claimed")
	waitFor(t, 30*time.Second, "the pinned job's reason", func() bool {
		return jobLogged(t, st, pinned.ID, "%no live node that runs jobs%slot:2%")
	})

	undrainedAt := time.Now()
	require.Equal(t, "", cliRow(t, bin, api, "node", "undrain", "p2")["drain"])
	waitFor(t, 30*time.Second, "the pinned job to run on p2 once undrained", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id = ? AND status = 'succeeded' AND node_id = 'p2'", pinned.ID) == 1
	})
	var queuedAt time.Time
	require.NoError(t, db.Raw("SELECT queued_at FROM jobs WHERE id = ?", pinned.ID).Row().Scan(&queuedAt))
	// Rounded to the microsecond by the database, which keeps the order.
	require.False(t, queuedAt.Before(undrainedAt.Truncate(time.Microsecond)),
		"the pinned job was claimed at %s, before the undrain at %s: a drained node claimed", queuedAt, undrainedAt)

	// Kill p3 while it runs its shard: the shard is taken over.
	grp := seed(slow)
	waitFor(t, 30*time.Second, "p3 to run its shard", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE shard_group = ? AND status = 'running' AND node_id = 'p3'", grp) == 1
	})
	nodes["p3"].kill()
	doneIn := waitForOr(t, 60*time.Second, "the broadcast to finish without p3", func() bool { return groupDone(t, st, grp) },
		func() string { return fmt.Sprintf("%+v", shards(t, st, grp)) })
	rows = checkGroup(t, st, grp, 3)
	var moved *shardRow
	for i := range rows {
		if rows[i].NodeID != "p1" && rows[i].NodeID != "p2" {
			continue
		}
		if jobLogged(t, st, rows[i].ID, "%taken over by node "+rows[i].NodeID+": its node p3 is not live%") {
			moved = &rows[i]
		}
	}
	require.NotNil(t, moved, "p3's shard was taken over by a live node: %+v", rows)
	require.Equal(t, int64(1), count(t, st, "SELECT COUNT(*) FROM nodes WHERE id = 'p3' AND status = 'dead'"))
	t.Logf("p2 drained %s after it saw the drain (its job: %s); broadcast %d: p3's shard %d of 3 taken over by %s, the run done %s after the kill",
		drainedIn.Round(time.Millisecond), drainSleep, grp, moved.ShardIndex, moved.NodeID, doneIn.Round(time.Millisecond))
}

func ptr[T any](v T) *T { return &v }

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
