// Command report is chime with one more task: the csv_report plugin of
// package report. It registers the task, then runs the unchanged chime
// command line, so every chime command, flag, config file and CHIME_*
// variable works as before:
//
//	go run ./examples/report serve
//	go build -o chime-report ./examples/report && ./chime-report serve --config chime.yaml
//
// This is the whole recipe for shipping your own tasks: a main package
// that registers them and hands over to cli.Main. See docs/plugins.md.
package main

import (
	"os"

	"github.com/chimesched/chime/cli"
	"github.com/chimesched/chime/examples/report/report"
	"github.com/chimesched/chime/tasks"
)

func main() {
	// Before cli.Main: serve builds its task engine over tasks.Default()
	// and adds the built-in tasks to it, so a kind registered here is
	// claimed and run like any built-in one.
	tasks.MustRegister(report.Kind, report.New)
	os.Exit(cli.Main())
}
