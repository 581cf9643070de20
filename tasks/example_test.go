package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chimesched/chime/tasks"
)

// Greet is a plugin: it embeds tasks.Base for Stop, Pause/Resume and the
// completion email, and implements only Execute.
type Greet struct{ tasks.Base }

func (g *Greet) Execute(ctx context.Context, job *tasks.Job) error {
	var p struct {
		Name  string `json:"name"`
		Times int    `json:"times"`
	}
	if err := job.Bind(&p); err != nil {
		return err
	}
	for i := 0; i < p.Times; i++ {
		// Where Pause holds the task and Stop ends it.
		if err := job.Checkpoint(ctx); err != nil {
			return err
		}
	}
	job.SetResult(fmt.Sprintf("greeted %s %d times", p.Name, p.Times))
	return nil
}

func Example() {
	// cmd/ wiring would use tasks.MustRegister on the default registry.
	reg := tasks.NewRegistry()
	reg.MustRegister("greet", func() tasks.Task { return &Greet{} })

	// What the engine does for each job.
	task, err := reg.New("greet")
	if err != nil {
		panic(err)
	}
	job := &tasks.Job{ID: 1, TaskType: "greet", Params: json.RawMessage(`{"name":"ada","times":3}`)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	defer cancel()
	if err := task.OnQueue(ctx, job); err != nil {
		panic(err)
	}
	err = task.Execute(ctx, job)
	fmt.Println(err, job.Result())

	_, err = reg.New("gret")
	fmt.Println(err)

	job.Params = json.RawMessage(`{"nmae":"ada"}`)
	fmt.Println(task.Execute(ctx, job))
	// Output:
	// <nil> greeted ada 3 times
	// tasks: unknown task kind "gret" (registered: greet)
	// params: unknown field "nmae"
}
