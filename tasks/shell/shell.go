package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/tasks"
)

// Kind is the task_type of this task.
const Kind = "shell"

// DefaultKillGrace is the default time between SIGTERM and SIGKILL.
const DefaultKillGrace = 5 * time.Second

// readerGrace bounds the wait for output after the group is killed: a
// process that escaped the group (setsid) may hold the pipes open forever.
const readerGrace = 2 * time.Second

// Params are the task's params.
type Params struct {
	Command   string            `json:"command"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env"`
	Workdir   string            `json:"workdir"`
	KillGrace *tasks.Duration   `json:"kill_grace"` // nil: DefaultKillGrace
}

func parse(raw json.RawMessage) (Params, error) {
	var p Params
	if err := tasks.DecodeParams(raw, &p); err != nil {
		return p, err
	}
	switch {
	case p.Command != "" && strings.TrimSpace(p.Command) == "":
		return p, tasks.FieldError("command", "must not be blank")
	case p.Command == "" && len(p.Argv) == 0:
		return p, tasks.FieldError("command", `one of "command" or "argv" is required`)
	case p.Command != "" && len(p.Argv) > 0:
		return p, tasks.FieldError("argv", `give "command" or "argv", not both`)
	case len(p.Argv) > 0 && p.Argv[0] == "":
		return p, tasks.FieldError("argv", "the first element, the program, must not be empty")
	}
	for k, v := range p.Env {
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			return p, tasks.FieldError("env", "invalid variable name %q", k)
		case reservedEnv(k):
			return p, tasks.FieldError("env", "%q: CHIME_* variables are the server's configuration and are never passed to jobs", k)
		case strings.ContainsRune(v, 0):
			return p, tasks.FieldError("env", "the value of %q contains a NUL byte", k)
		}
	}
	return p, nil
}

// reservedEnv reports a CHIME_* name. Case is ignored: the configuration
// loader's matching is not something a job should probe.
func reservedEnv(name string) bool {
	return len(name) >= len("CHIME_") && strings.EqualFold(name[:len("CHIME_")], "CHIME_")
}

// inheritedEnv are the server's variables a child starts with: what
// programs need to find themselves, their home and their locale, and
// nothing that could carry a secret. Everything else (CHIME_* above all:
// the SMTP password, the API token, the database DSN) stays with the
// server; a job that needs more says so in params.env.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR"}

// defaultPath is the PATH of a child when the server has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// environ builds the child's environment: the allowlisted part of the
// server's (inheritedEnv and LC_*), then params.env, which wins.
func environ(extra map[string]string) []string {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (slices.Contains(inheritedEnv, k) || strings.HasPrefix(k, "LC_")) {
			vars[k] = v
		}
	}
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = defaultPath
	}
	maps.Copy(vars, extra)
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if !reservedEnv(k) { // params were validated; this guards a caller that skipped it
			env = append(env, k+"="+vars[k])
		}
	}
	return env
}

func (p Params) killGrace() time.Duration {
	if p.KillGrace == nil {
		return DefaultKillGrace
	}
	return p.KillGrace.Std()
}

// Task runs one command. Pause, Resume and Stop are safe to call from
// another goroutine while Execute runs. Stop is Base.Stop: it cancels the
// context, and Execute's answer to that (SIGTERM, then SIGKILL) is the one
// a timeout gets too.
type Task struct {
	tasks.Base

	mu       sync.Mutex
	job      *tasks.Job    // set once Execute runs, for log lines from Pause and Kill
	pgid     int           // process group (= child pid); 0 until started
	exited   bool          // child reaped: the pgid may no longer be ours to signal
	stopping bool          // SIGTERM sent: a pause would only hold up the stop
	killed   bool          // Kill was called
	kill     chan struct{} // closed by Kill; see killChan
	reaped   chan struct{} // closed once the child is reaped; nil until started
}

// killWait bounds how long Kill waits for the child to be reaped after
// SIGKILL, which the kernel delivers at once unless the process is stuck
// in uninterruptible sleep.
const killWait = 2 * time.Second

// killChan returns t.kill, creating it; t.mu must be held. Lazy, so that a
// Task built as a literal works too.
func (t *Task) killChan() chan struct{} {
	if t.kill == nil {
		t.kill = make(chan struct{})
	}
	return t.kill
}

// New returns a shell task.
func New() tasks.Task { return &Task{} }

// QueueFree implements tasks.QueueFree: OnQueue is Base's, which does
// nothing, so the engine may claim the job straight into running.
func (*Task) QueueFree() {}

// Validate implements tasks.Validator.
func (*Task) Validate(params json.RawMessage) error {
	if _, err := parse(params); err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	return nil
}

// PID returns the child's pid (also its process group id), or 0 when no
// child is running. For tests and diagnostics; the engine has no use for it.
func (t *Task) PID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exited {
		return 0
	}
	return t.pgid
}

// Pause stops the whole process group with SIGSTOP. Before the child
// starts it only holds Execute at its start. It refuses (false) once the
// child has exited or is being stopped: there is nothing left to hold.
func (t *Task) Pause() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exited || t.stopping || t.killed {
		if t.job != nil {
			t.job.Log().Warn("shell: cannot pause: the process is stopping or has exited")
		}
		return false
	}
	if !t.Base.Pause() {
		return false
	}
	if t.pgid != 0 && !t.exited {
		if err := syscall.Kill(-t.pgid, syscall.SIGSTOP); err != nil {
			t.Base.Resume()
			return false
		}
	}
	return true
}

// Resume continues the process group with SIGCONT.
func (t *Task) Resume() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.Base.Resume() {
		return false
	}
	if t.pgid != 0 && !t.exited {
		// ESRCH means the group is gone; it is resumed in every sense
		// that matters.
		_ = syscall.Kill(-t.pgid, syscall.SIGCONT)
	}
	return true
}

// Kill sends SIGKILL to the process group at once, whatever kill_grace
// says, and waits (up to 2s) until the child is reaped; a child not started
// yet never starts. The task engine calls it when it stops and cannot wait
// any longer, so that nothing a job started outlives the engine. It
// reports whether a child was running.
func (t *Task) Kill() bool {
	t.mu.Lock()
	if !t.killed {
		t.killed = true
		close(t.killChan())
	}
	pgid, reaped := t.pgid, t.reaped
	running := pgid != 0 && !t.exited && !isClosed(reaped)
	if running {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if t.job != nil {
			t.job.Log().WithField("pid", pgid).Warn("shell: killed the process group (SIGKILL): the task engine is stopping")
		}
	}
	t.mu.Unlock()
	if running && reaped != nil {
		timer := time.NewTimer(killWait)
		defer timer.Stop()
		select {
		case <-reaped:
		case <-timer.C:
		}
	}
	return running
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, job *tasks.Job) error {
	t.mu.Lock()
	t.job = job
	t.mu.Unlock()
	p, err := parse(job.Params)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	if err := job.Checkpoint(ctx); err != nil {
		return fmt.Errorf("shell: before start: %w", tasks.ContextError(ctx))
	}

	var cmd *exec.Cmd
	if p.Command != "" {
		cmd = exec.Command("/bin/sh", "-c", p.Command)
	} else {
		cmd = exec.Command(p.Argv[0], p.Argv[1:]...)
	}
	cmd.Dir = p.Workdir
	cmd.Env = environ(p.Env)
	if job.ShardTotal > 0 {
		// A broadcast's shard (tasks.Job.ShardIndex): a script splits its
		// work by these. CHIME_* names, which params.env may not set, so a
		// job cannot be told another shard than its own.
		cmd.Env = append(cmd.Env, "CHIME_SHARD_INDEX="+strconv.Itoa(job.ShardIndex), "CHIME_SHARD_TOTAL="+strconv.Itoa(job.ShardTotal))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// Our own pipes rather than io.Writers: with writers, exec's copy
	// goroutines make Wait block until every grandchild closes the pipe.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("shell: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return fmt.Errorf("shell: stderr pipe: %w", err)
	}
	defer func() { _ = outR.Close(); _ = errR.Close() }()
	cmd.Stdout, cmd.Stderr = outW, errW

	t.mu.Lock()
	if t.killed {
		t.mu.Unlock()
		_ = outW.Close()
		_ = errW.Close()
		return errors.New("shell: killed before the process started: the task engine is stopping")
	}
	kill := t.killChan()
	err = cmd.Start()
	_ = outW.Close()
	_ = errW.Close()
	if err != nil {
		t.mu.Unlock()
		if p.Workdir != "" {
			return fmt.Errorf("shell: start in workdir %q: %w", p.Workdir, err)
		}
		return fmt.Errorf("shell: start: %w", err)
	}
	pgid := cmd.Process.Pid
	t.pgid = pgid
	reaped := make(chan struct{})
	t.reaped = reaped
	if job.Paused() { // paused between Checkpoint and Start
		_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	}
	t.mu.Unlock()
	log := job.Log()
	log.WithField("pid", pgid).Info("shell: started process")

	stdout, stderr := &tail{max: tailBytes}, &tail{max: tailBytes}
	var readers sync.WaitGroup
	readers.Go(func() { drain(outR, stdout, &lineLogger{entry: log, level: logrus.InfoLevel, stream: "stdout"}) })
	readers.Go(func() { drain(errR, stderr, &lineLogger{entry: log, level: logrus.WarnLevel, stream: "stderr"}) })

	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		close(reaped)
		waited <- err
	}()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		waitErr = t.terminate(log, pgid, p.killGrace(), waited, kill)
	case <-kill: // Kill sent SIGKILL already
		waitErr = <-waited
	}

	t.mu.Lock()
	t.exited = true
	t.mu.Unlock()
	// Whatever the child left behind in its group goes with it. The pgid
	// cannot have been reused yet: members keep it alive.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitReaders(&readers, outR, errR)

	job.SetResult(result(stdout, stderr))
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("shell: %w (process %v)", tasks.ContextError(ctx), waitErr)
	case waitErr != nil:
		var exitErr *exec.ExitError
		if line := stderr.lastLine(); line != "" && errors.As(waitErr, &exitErr) {
			return fmt.Errorf("shell: command failed: %w (stderr: %s)", waitErr, line)
		}
		return fmt.Errorf("shell: command failed: %w", waitErr)
	}
	return nil
}

// terminate asks the group to end, then forces it after grace, or at
// once when Kill closes kill.
func (t *Task) terminate(log *logrus.Entry, pgid int, grace time.Duration, waited <-chan error, kill <-chan struct{}) error {
	log.WithField("pid", pgid).Infof("shell: sending SIGTERM to the process group (kill after %v)", grace)
	t.mu.Lock()
	t.stopping = true
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	// A stopped process keeps SIGTERM pending until continued.
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	t.Base.Resume()
	t.mu.Unlock()

	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-waited:
		return err
	case <-kill: // Kill sent SIGKILL already
		return <-waited
	case <-timer.C:
		log.WithField("pid", pgid).Warn("shell: grace period over, sending SIGKILL to the process group")
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}

func waitReaders(wg *sync.WaitGroup, files ...*os.File) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := time.NewTimer(readerGrace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		for _, f := range files {
			_ = f.Close() // unblocks the readers
		}
		<-done
	}
}

func result(stdout, stderr *tail) string {
	s := stdout.String()
	if e := stderr.String(); e != "" {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "--- stderr ---\n" + e
	}
	return s
}
