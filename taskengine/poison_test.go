package taskengine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/httpcall"
)

// poisonTask ends the way a plugin's output can: an error and a result
// with a byte that is not UTF-8 and longer than their columns, and a log
// line of both. MySQL refuses every one of them as it is.
type poisonTask struct{ tasks.Base }

func (*poisonTask) Execute(_ context.Context, job *tasks.Job) error {
	job.Log().Info("bad byte \xE9 in a long line " + strings.Repeat("l", 70_000))
	job.SetResult("HTTP 200 \xE9\n" + strings.Repeat("r", 2<<20))
	return errors.New("status \xE9 " + strings.Repeat("e", 70_000))
}

// badStatusServer answers every HTTP request with a status line holding
// byte 0xE9, as the server in the report did. It stops at cleanup.
func badStatusServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte("HTTP/1.1 200 \xE9\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String() + "/"
}

// One job whose outcome the database cannot store as it is (an httpcall
// against a server with byte 0xE9 in its status line, a plugin with bad
// UTF-8 and over-long output) is stored cut and marked, and the node's
// other jobs finish beside it. Before, on MariaDB, the completer retried
// the refused batch forever and the sleep jobs stayed running.
func TestPoisonOutcomeContained(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		url := badStatusServer(t)
		httpDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "http", TaskType: httpcall.Kind, DefaultParams: fmt.Sprintf(`{"url":%q}`, url)}).ID
		poisonDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "poison", TaskType: "poison"}).ID
		sleepDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "sleep", DefaultParams: `{"duration":"300ms"}`}).ID
		httpJob := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: httpDef}).ID
		poisonJob := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: poisonDef}).ID
		var sleepers []int64
		for i := 0; i < 5; i++ {
			sleepers = append(sleepers, testdb.Job(t, st, &testdb.JobOpts{DefinitionID: sleepDef}).ID)
		}
		cfg := testConfig(t, nodeName(t))
		cfg.Registry.MustRegister(httpcall.Kind, httpcall.New)
		cfg.Registry.MustRegister("poison", func() tasks.Task { return &poisonTask{} })
		eng := startEngine(t, st, cfg)

		for _, id := range sleepers {
			waitOutcome(t, eng, st, id, models.JobSucceeded)
		}
		j := waitOutcome(t, eng, st, httpJob, models.JobSucceeded)
		// The status line is in the result; the call logs no line of its
		// own (the poison job's lines carry bad bytes to job_logs).
		require.Equal(t, "HTTP 200 \uFFFD\nok", deref(j.Result))
		require.Empty(t, jobLogs(t, db, httpJob))

		j = waitOutcome(t, eng, st, poisonJob, models.JobFailed)
		e := deref(j.Error)
		require.True(t, utf8.ValidString(e))
		require.LessOrEqual(t, len(e), chimedb.MaxErrorBytes)
		require.True(t, strings.HasPrefix(e, "status \uFFFD eee"), e[:40])
		require.Contains(t, e[len(e)-40:], "…[truncated ")
		r := deref(j.Result)
		require.LessOrEqual(t, len(r), chimedb.MaxResultBytes)
		require.True(t, strings.HasPrefix(r, "HTTP 200 \uFFFD\nrrr"))
		require.Contains(t, r[len(r)-40:], "…[truncated ")
		requireLog(t, db, poisonJob, "info: bad byte \uFFFD in a long line lll")
		requireLog(t, db, poisonJob, "failed (attempt 1 of 1): status \uFFFD eee")
		for _, l := range jobLogs(t, db, poisonJob) {
			require.LessOrEqual(t, len(l), len("error: ")+chimedb.MaxLogMessageBytes)
		}
	})
}
