// Package taskengine is chime's second engine (the paper's figure 5): it
// turns due rows of the jobs table into running tasks in an ants pool and
// records everything that happens to them in jobs and job_logs.
//
// # Usage
//
//	eng, err := taskengine.New(st, &taskengine.Config{NodeID: "node-1", Registry: reg})
//	if err := eng.Start(ctx); err != nil { … }
//	// app wires the schedule engine's OnFire to eng.Wake, and its store
//	// through eng.HandoffStore (see handoff_store.go)
//	defer eng.Stop(stopCtx) // graceful: see Stop
//
// # Parts
//
// The Engine is a composition of services, each on internal/startstop
// (river's producer and completer split is the model), started in this
// order and stopped in reverse:
//
//   - the log writer buffers job_logs lines and writes them in multi-row
//     INSERTs;
//   - the node's jobs: at Start, recovery of what a dead process with this
//     NodeID left behind; at Stop, after the completer, the jobs still
//     queued here go back to pending;
//   - the completer writes outcomes in batches, with the lines buffered
//     until then (after a fire's hand-off it holds its next batch until the
//     herd has started, at most 50 ms: herd.go), and the starter moves
//     queued jobs to running in batches;
//   - the controller acts on jobs.control and beats running jobs' heartbeat_at;
//   - the executor runs jobs: OnQueue, the ants pool, the runs under way,
//     and the graceful end of them all at Stop;
//   - the hand-off gate admits the schedule engine's hand-offs while the
//     engine runs;
//   - the producer claims due jobs (poll, wake-ups, the jobs watch, the
//     claim floor, the held retry) for the workers it has reserved, and
//     hands them to the executor.
//
// The workers the pool has free are counted once (workers), by the
// producer and the hand-off that reserve them and the executor that frees
// them. The engine ends when Stop is called or when Start's ctx ends, the
// same graceful way either; it starts again after a Stop, once every job
// of its last run has returned. Tests wait on the engine's test signals
// (claimed, started, completed, controlled, flushed) instead of polling the
// database.
//
// # Lifecycle of a job
//
// The producer claims due pending rows (every PollInterval, on Wake, when
// Config.Watch reports rows added to jobs, and at once again while claims
// come back full), never more than the pool has free workers, and moves
// them to queued on this node in one transaction (FOR UPDATE SKIP LOCKED
// on MySQL and PostgreSQL). The jobs of a task
// that declares tasks.QueueFree (its OnQueue does nothing) go straight to
// running instead, in the same UPDATE kind as StartJobs writes, and reach
// the worker their claim reserved without another round trip; Stop gives
// such a job back (attempt included) if it has not reached its worker. Any
// other claimed job's OnQueue runs on a
// goroutine of its own, before the job enters the pool (the paper's
// onQueue): a slow OnQueue holds no pool worker and no other job, and an
// error, a panic or OnQueueTimeout fails the job without taking a worker.
// The worker the claim reserved stays reserved meanwhile, so the jobs in
// OnQueue and in the pool never exceed PoolSize. Then, on a pool worker:
// running (started_at, attempt + 1) → Execute under the definition's
// timeout, which does not count paused time → OnComplete → succeeded,
// failed or stopped. A failed attempt with attempts left goes
// back to pending with run_at = now + backoff (exponential from
// retry_backoff_seconds, jittered, capped). A panic in a task fails that
// job with the panic and its stack in job_logs; an unknown task_type fails
// the job with an error naming the registered kinds.
//
// With Config.Backlog, a fire on this node may also hand off jobs past the
// free workers, written queued here; they wait in the executor's backlog,
// oldest first, and a worker that ends its run takes the next one on the
// same goroutine and starts it through the starter, as a claimed queued
// job. They hold their place in the worker count, so no claim runs while
// the backlog is not empty. The backlog is bounded by the pool's pace (see
// Config.Backlog); a job waits in it at most BacklogWait, and Stop, a drain
// and the end of the wait give it back to pending without using an attempt.
//
// Every move out of queued, running or paused is guarded by the row's
// status and node_id, so a late writer never overwrites a newer state.
//
// # Performance
//
// Nothing per job is a synchronous round trip of its own: starts and
// outcomes go through batchers that write a group of jobs at once (group
// commit: large batches under load; no added wait when idle, but for the
// starter, which waits up to 0.8 ms for the rest of a claim; a job claimed
// straight into running has no start to write), and job_logs
// lines are buffered and written with multi-row INSERTs. An outcome batch
// takes the buffered lines into its own transaction, with each outcome's
// line, and the log writer waits for it: a job's final state is never
// visible before the lines it logged up to then, and a run's lines get
// their ids in the order they were logged. Every buffer is flushed before
// Stop returns. A start is one guarded UPDATE by primary key
// and an outcome batch one guarded UPDATE and its commit; the guard sits in
// the WHERE, and the rare batch where a row no longer matches is sorted out
// on a slower exact path. A worker is free again as soon as its outcome is
// handed to the completer. Up to two claims run at once under a backlog,
// each for workers it has reserved, so claiming overlaps with running
// without ever taking more jobs than there are free workers.
//
// # Control
//
// Every ControlInterval the engine reads jobs.control: pause, resume and
// stop on this node's running or paused jobs call the task's Pause, Resume
// or Stop and record paused, running or (when Execute returns) stopped, or
// the refusal; stop on a pending or queued job cancels it (any node does
// this). A schedule with concurrency = 'forbid' never has two jobs active:
// later ones wait in pending, and the wait is logged once per job.
//
// # Shutdown and crash recovery
//
// Stop (or the end of Start's ctx) stops claiming, sends jobs that never
// started back to pending without using an attempt, waits ShutdownGrace
// for running jobs, then cancels them (their attempt counts; they are
// retried if attempts are left). A canceled job gets ShutdownGrace once
// more to end; then a task with a Kill() bool method (tasks/shell: SIGKILL
// to its process group) is killed, so no process a job started outlives
// Stop, whatever its kill_grace; when Stop's ctx ends first, that happens
// at once. Start first recovers what a dead process with the same NodeID
// left behind (store.RecoverNode): queued jobs go back to pending, running
// ones are recovered without using an attempt when their definition
// requests recovery, else retried or failed. Failover between nodes belongs
// to the cluster work, not here.
//
// A pause does not survive the node: a job paused (or asked to pause) when
// its node stops or dies is retried unpaused, and its job_logs say "pause
// lost".
//
// taskengine imports chimedb (its store interface; store implements it),
// models, tasks and internal/{metrics,startstop,testsignal}; it never
// imports store, the schedule engine, the API or the CLI.
package taskengine
