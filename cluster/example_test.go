package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/cluster"
	"github.com/chimesched/chime/store"
)

// A node joins the cluster, wins the scheduler lease (it is alone), and
// leaves. app does the same around the engines: Start before them, Stop
// after them, and hands SchedulerElector() to the schedule engine.
func Example() {
	dir, _ := os.MkdirTemp("", "chime-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	st, err := store.Open(ctx, store.Config{Driver: store.SQLite, DSN: filepath.Join(dir, "chime.db"), Logger: log})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	node, err := cluster.New(st, &cluster.Config{
		NodeID: "n1", Roles: "scheduler,worker", Heartbeat: 100 * time.Millisecond, FailoverAfter: time.Second, Logger: log,
	})
	if err != nil {
		panic(err)
	}
	leading := make(chan bool, 4)
	node.SchedulerElector().OnChange(func(v bool) { leading <- v })
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	fmt.Println("leading:", <-leading)
	fmt.Println("the schedule engine may fire:", node.SchedulerElector().Leading())
	if err := node.Stop(ctx); err != nil {
		panic(err)
	}
	fmt.Println("leading:", <-leading)
	// Output:
	// leading: true
	// the schedule engine may fire: true
	// leading: false
}
