package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

const (
	workflowsPath = api.Prefix + "/workflows"
	runsPath      = api.Prefix + "/runs"
)

// maxWorkflowFile bounds a workflow file: the API takes 1,000 steps and
// 10,000 edges, well under it.
const maxWorkflowFile = 8 << 20

func newWorkflowCommand() *cobra.Command {
	cmd, f := adminGroup("workflow", "Manage workflows (steps joined by edges) and their runs",
		"A workflow runs job definitions as steps; an edge from one step to another says the second waits for the first, "+
			"on success (the default), failure or always. docs/workflows.md tells the semantics.")
	cmd.Aliases = []string{"workflows", "wf"}

	createCmd := &cobra.Command{
		Use:   "create FILE",
		Short: "Create a workflow from a YAML or JSON file (- reads stdin)",
		Long: "The file holds name, description, failure_policy (stop or continue), notify_on (never, failure, success or always: " +
			"when a run's final state is emailed) with notify_emails, steps (name, definition, params, " +
			"timeout_seconds, max_attempts, wait_for) and edges. An edge is an object {from, to, condition} or a line " +
			"\"a -> b\" (success), \"a -failure-> b\" or \"a -always-> b\".",
		Example: `  chime workflow create etl.yaml

  # etl.yaml
  name: nightly-etl
  steps:
    - {name: extract, definition: extract-orders}
    - {name: transform, definition: transform-orders}
    - {name: cleanup, definition: cleanup-staging}
  edges:
    - extract -> transform
    - transform -failure-> cleanup`,
		Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			spec, err := readWorkflowFile(args[0])
			if err != nil {
				return err
			}
			return c.post(ctx, out, workflowsPath, spec)
		}),
	}
	chainCmd := &cobra.Command{
		Use:   "chain NAME DEFINITION DEFINITION...",
		Short: "Create a workflow that runs definitions one after another, each when the one before succeeded",
		Long: "Child jobs, in one command: \"when A succeeds, run B\". Each step is named after its definition. " +
			"Start it with chime workflow run NAME, or from plain SQL with an INSERT into workflow_runs.",
		Example: `  chime workflow chain import-then-report import-orders daily-report`,
		Args:    cobra.MinimumNArgs(3),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			spec := chimedb.WorkflowSpec{Name: args[0]}
			for i, d := range args[1:] {
				spec.Steps = append(spec.Steps, chimedb.StepSpec{Name: d, Definition: d})
				if i > 0 {
					spec.Edges = append(spec.Edges, chimedb.EdgeSpec{From: args[i], To: d})
				}
			}
			return c.post(ctx, out, workflowsPath, spec)
		}),
	}
	listCmd := &cobra.Command{
		Use: "list", Short: "List workflows by name", Args: cobra.NoArgs,
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, _ []string) error {
			return list(ctx, c, out, workflowsPath, nil, []string{"ID", "NAME", "FAILURE_POLICY", "DESCRIPTION"},
				func(w *models.Workflow) []string {
					return []string{itoa(w.ID), w.Name, string(w.FailurePolicy), w.Description}
				})
		}),
	}
	showCmd := &cobra.Command{
		Use: "show ID|NAME", Short: "Show a workflow with its steps and edges", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, workflowsPath, "workflow", args[0])
			if err != nil {
				return err
			}
			if c.output == "json" {
				return c.show(ctx, out, workflowsPath+"/"+id)
			}
			var g chimedb.WorkflowGraph
			if err := c.do(ctx, "GET", workflowsPath+"/"+id, nil, nil, &g); err != nil {
				return err
			}
			fmt.Fprintf(out, "workflow %d %s (failure policy %s)\n", g.ID, inertCell(g.Name), g.FailurePolicy)
			if g.NotifyOn != "" && g.NotifyOn != models.NotifyNever {
				fmt.Fprintf(out, "emails a run's final state (%s) to %s\n", g.NotifyOn, inertCell(g.NotifyEmails))
			}
			names := map[int64]string{}
			rows := make([][]string, 0, len(g.Steps))
			for _, s := range g.Steps {
				names[s.ID] = s.Name
				rows = append(rows, []string{s.Name, itoa(s.JobDefinitionID), string(s.WaitFor), str(string(s.Params))})
			}
			if err := table(out, []string{"STEP", "DEFINITION_ID", "WAIT_FOR", "PARAMS"}, rows); err != nil {
				return err
			}
			for _, e := range g.Edges {
				fmt.Fprintf(out, "  %s -%s-> %s\n", inertCell(names[e.FromStepID]), e.Condition, inertCell(names[e.ToStepID]))
			}
			return nil
		}),
	}
	deleteCmd := &cobra.Command{
		Use: "delete ID|NAME", Short: "Delete a workflow with no run in progress", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, workflowsPath, "workflow", args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, "DELETE", workflowsPath+"/"+id, nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "deleted workflow %s\n", id)
			return nil
		}),
	}
	var params string
	runCmd := &cobra.Command{
		Use: "run ID|NAME [--params JSON]", Short: "Start a run; its first steps' jobs are written at once", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			id, err := c.resolve(ctx, workflowsPath, "workflow", args[0])
			if err != nil {
				return err
			}
			body := map[string]any{"started_by": "cli"}
			if params != "" {
				p, err := jsonFlag("params", params)
				if err != nil {
					return err
				}
				body["params"] = p
			}
			return c.post(ctx, out, workflowsPath+"/"+id+"/runs", body)
		}),
	}
	runCmd.Flags().StringVar(&params, "params", "", "the run's params, a JSON object every step's task reads")
	var status string
	var limit int
	runsCmd := &cobra.Command{
		Use: "runs [ID|NAME]", Short: "List runs, newest first, of one workflow or all", Args: cobra.MaximumNArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				id, err := c.resolve(ctx, workflowsPath, "workflow", args[0])
				if err != nil {
					return err
				}
				q.Set("workflow_id", id)
			}
			if status != "" {
				q.Set("status", status)
			}
			if limit > 0 {
				q.Set("limit", itoa(int64(limit)))
			}
			return list(ctx, c, out, runsPath, q, []string{"ID", "WORKFLOW_ID", "STATUS", "GEN", "STARTED_BY", "STARTED", "FINISHED", "REASON"},
				func(r *models.WorkflowRun) []string {
					return []string{itoa(r.ID), itoa(r.WorkflowID), string(r.Status), itoa(int64(r.Generation)), r.StartedBy,
						timeCell(r.StartedAt), timeCell(r.FinishedAt), r.Reason}
				})
		}),
	}
	runsCmd.Flags().StringVar(&status, "status", "", "only runs in this status")
	runsCmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (default 100)")
	statusCmd := &cobra.Command{
		Use: "status RUN_ID", Short: "Show a run with the state of each step", Args: cobra.ExactArgs(1),
		RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
			if c.output == "json" {
				return c.show(ctx, out, runsPath+"/"+url.PathEscape(args[0]))
			}
			var v chimedb.RunView
			if err := c.do(ctx, "GET", runsPath+"/"+url.PathEscape(args[0]), nil, nil, &v); err != nil {
				return err
			}
			fmt.Fprintf(out, "run %d of %s: %s (generation %d)", v.Run.ID, inertCell(v.Workflow.Name), v.Run.Status, v.Run.Generation)
			if v.Run.Reason != "" {
				fmt.Fprintf(out, ": %s", inertCell(v.Run.Reason))
			}
			fmt.Fprintln(out)
			rows := make([][]string, 0, len(v.Steps))
			for _, s := range v.Steps {
				job := "-"
				if s.Job != nil {
					job = itoa(s.Job.ID)
				}
				rows = append(rows, []string{s.Step.Name, string(s.State), job})
			}
			return table(out, []string{"STEP", "STATE", "JOB"}, rows)
		}),
	}
	action := func(verb, short string) *cobra.Command {
		return &cobra.Command{
			Use: verb + " RUN_ID", Short: short, Args: cobra.ExactArgs(1),
			RunE: runner(f, func(ctx context.Context, c *client, out io.Writer, args []string) error {
				return c.post(ctx, out, runsPath+"/"+url.PathEscape(args[0])+"/"+verb, nil)
			}),
		}
	}
	cmd.AddCommand(createCmd, chainCmd, listCmd, showCmd, deleteCmd, runCmd, runsCmd, statusCmd,
		action("cancel", "Cancel a run: pending steps canceled, running ones asked to stop"),
		action("rerun", "Run a failed or canceled run again from the steps that did not succeed"),
		action("pause", "Pause a run: no new step starts until it is resumed"),
		action("resume", "Resume a paused run"))
	return cmd
}

// workflowFile is a workflow file: chimedb.WorkflowSpec with edges that
// may be written as lines.
type workflowFile struct {
	Name          string               `json:"name"`
	Description   string               `json:"description,omitempty"`
	FailurePolicy models.FailurePolicy `json:"failure_policy,omitempty"`
	NotifyOn      models.NotifyOn      `json:"notify_on,omitempty"`
	NotifyEmails  string               `json:"notify_emails,omitempty"`
	Steps         []chimedb.StepSpec   `json:"steps"`
	Edges         []any                `json:"edges,omitempty"`
}

// readWorkflowFile reads path (- for stdin) as YAML, of which JSON is a
// part, and returns the API's body.
func readWorkflowFile(path string) (*chimedb.WorkflowSpec, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWorkflowFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWorkflowFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxWorkflowFile)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Through JSON, so the fields are the API's, strictly.
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var wf workflowFile
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	spec := &chimedb.WorkflowSpec{Name: wf.Name, Description: wf.Description, FailurePolicy: wf.FailurePolicy,
		NotifyOn: wf.NotifyOn, NotifyEmails: wf.NotifyEmails, Steps: wf.Steps}
	for i, e := range wf.Edges {
		edge, err := parseEdge(e)
		if err != nil {
			return nil, fmt.Errorf("%s: edge %d: %w", path, i+1, err)
		}
		spec.Edges = append(spec.Edges, edge)
	}
	return spec, nil
}

// parseEdge reads an edge written as an object or as a line.
func parseEdge(e any) (chimedb.EdgeSpec, error) {
	switch v := e.(type) {
	case string:
		for _, cond := range []models.EdgeCondition{models.EdgeSuccess, models.EdgeFailure, models.EdgeAlways} {
			if from, to, ok := strings.Cut(v, " -"+string(cond)+"-> "); ok {
				return chimedb.EdgeSpec{From: strings.TrimSpace(from), To: strings.TrimSpace(to), Condition: cond}, nil
			}
		}
		if from, to, ok := strings.Cut(v, "->"); ok {
			return chimedb.EdgeSpec{From: strings.TrimSpace(from), To: strings.TrimSpace(to), Condition: models.EdgeSuccess}, nil
		}
		return chimedb.EdgeSpec{}, fmt.Errorf("%q: write \"a -> b\", \"a -failure-> b\" or \"a -always-> b\"", v)
	case map[string]any:
		js, _ := json.Marshal(v)
		var out chimedb.EdgeSpec
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			return out, err
		}
		return out, nil
	}
	return chimedb.EdgeSpec{}, fmt.Errorf("an edge is a line or an object {from, to, condition}, not %T", e)
}
