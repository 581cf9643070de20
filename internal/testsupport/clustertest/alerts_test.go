package clustertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/alert"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
)

// A job fails in a three-node cluster and the node that judges the alert
// rules (the maintenance lease's holder) is killed -9 right after the
// failure is recorded, before it has judged it: the next holder must find
// the failure (it reads back what its predecessor may have missed) and the
// webhook receiver must get the alert exactly once, signed, whichever node
// delivers it.
func TestAlertExactlyOnceAcrossKill(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { alertExactlyOnce(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { alertExactlyOnce(t, testdb.CreatePostgresDatabase(t)) })
}

// hookReceiver is a webhook receiver on loopback that checks each
// request's signature and counts deliveries by X-Chime-Alert-Id.
type hookReceiver struct {
	key []byte
	mu  sync.Mutex
	got map[string]int
	bad []string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := alert.Verify(h.key, r.Header.Get("X-Chime-Timestamp"), r.Header.Get("X-Chime-Signature"), body, time.Now(), 5*time.Minute); err != nil {
		h.bad = append(h.bad, err.Error())
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	h.got[r.Header.Get("X-Chime-Alert-Id")]++
}

func (h *hookReceiver) counts() (map[string]int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.got {
		out[k] = v
	}
	return out, append([]string(nil), h.bad...)
}

func alertExactlyOnce(t *testing.T, dsn string) {
	ctx := context.Background()
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	db := st.DB()

	recv := &hookReceiver{key: []byte("cluster-signing-key"), got: map[string]int{}}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	// Rows, as an admin may write them with SQL.
	ch := models.AlertChannel{Name: "hook", Kind: models.ChannelWebhook, URL: srv.URL + "/chime", SigningKey: string(recv.key),
		TimeoutSeconds: 5, Enabled: true}
	require.NoError(t, db.Create(&ch).Error)
	rule := models.AlertRule{Name: "failures", Event: models.EventJobFailed, Scope: models.ScopeAll, ChannelID: ch.ID, Enabled: true}
	require.NoError(t, db.Create(&rule).Error)
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "fails", DefaultParams: `{"duration":"1s","fail":true}`})

	nodes := map[string]*nodeProc{}
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes[id] = startNode(t, bin, dsn, id)
	}
	judge := func() string {
		l, err := st.GetLease(ctx, chimedb.MaintenanceLease)
		if err != nil || !l.Live {
			return ""
		}
		return l.Holder
	}
	waitFor(t, 20*time.Second, "a maintenance lease holder", func() bool { return nodes[judge()] != nil })

	job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID})
	waitFor(t, 20*time.Second, "the job to fail", func() bool {
		return testdb.GetJob(t, st, job.ID).Status == models.JobFailed
	})
	victim := nodes[judge()]
	require.NotNil(t, victim, "no live maintenance holder when the job failed")
	victim.kill()
	// The evaluator judges every 15 s; the poll above noticed the failure
	// within 50 ms of it, so the victim had almost surely not judged it.
	before := count(t, st, "SELECT COUNT(*) FROM alerts WHERE rule_id = ?", rule.ID)
	t.Logf("killed %s, the maintenance holder, when job %d failed (alerts recorded before the kill: %d)", victim.id, job.ID, before)

	key := ""
	took := waitForOr(t, 45*time.Second, "the alert at the receiver", func() bool {
		got, _ := recv.counts()
		for k := range got {
			key = k
		}
		return key != ""
	}, func() string {
		got, bad := recv.counts()
		var rows []models.Alert
		_ = db.Find(&rows).Error
		return fmt.Sprintf("received %v, refused %q, alerts rows %s", got, bad, fmtAlerts(rows))
	})
	t.Logf("alert %s arrived %s after the kill", key, took.Round(100*time.Millisecond))
	// A duplicate would come from a second node's claim of the same row or a
	// second recording; the dispatchers read the outbox every 2 s, so three
	// of their rounds on real processes give one the chance to show up.
	time.Sleep(6 * time.Second)

	got, bad := recv.counts()
	require.Empty(t, bad, "requests with a bad signature")
	require.Equal(t, map[string]int{key: 1}, got, "each alert exactly once at the receiver")
	var rows []models.Alert
	require.NoError(t, db.Where("rule_id = ?", rule.ID).Find(&rows).Error)
	require.Len(t, rows, 1, "one alerts row for the failure")
	require.Equal(t, key, rows[0].DedupeKey)
	require.Equal(t, models.AlertSent, rows[0].Status)
	if before == 0 {
		require.NotEqual(t, victim.id, rows[0].NodeID, "the killed node cannot have delivered it")
	}
	live := map[string]*nodeProc{}
	for id, p := range nodes {
		if p.running() {
			live[id] = p
		}
	}
	stopAll(t, st, live)
}

func fmtAlerts(rows []models.Alert) string {
	out := ""
	for _, r := range rows {
		e := ""
		if r.LastError != nil {
			e = *r.LastError
		}
		out += fmt.Sprintf("\n  %s %s on %q %s", r.DedupeKey, r.Status, r.NodeID, e)
	}
	return out
}
