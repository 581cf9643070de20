package httpcall_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/httpcall"
)

// BenchmarkExecute runs one httpcall job per op, as a schedule's job runs
// every second, against a local server on a kept-alive connection: what a
// job costs the task (and the server, in this process too), allocations
// included. Its logger keeps info lines and formats none, as a node's job
// logger does.
func BenchmarkExecute(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	defer httpcall.CloseIdleConnections()
	raw, err := json.Marshal(map[string]any{"url": srv.URL + "/s/bench-00001", "headers": map[string]string{"X-Token": "t"}})
	if err != nil {
		b.Fatal(err)
	}
	logger, _ := logtest.NewNullLogger()
	b.ReportAllocs()
	for b.Loop() {
		task := httpcall.New()
		job := &tasks.Job{ID: 1, TaskType: httpcall.Kind, Params: raw, Logger: logrus.NewEntry(logger)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		if err := task.Execute(ctx, job); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}
