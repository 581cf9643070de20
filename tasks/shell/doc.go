// Package shell is the built-in "shell" task: it runs a command in a child
// process. It imports only tasks and the standard library, and is for Unix
// (it relies on process groups and job-control signals).
//
// Params:
//
//	{"command": "pg_dump ... | gzip > x.gz"}   run by /bin/sh -c
//	{"argv": ["/usr/bin/rsync", "-a", "src/", "dst/"]}   no shell
//	"env": {"K": "V"}       added to the process environment (no CHIME_* names)
//	"workdir": "/srv/app"   working directory
//	"kill_grace": "5s"      time between SIGTERM and SIGKILL on stop
//
// Exactly one of command and argv is required.
//
// The child does not inherit the server's environment, which holds its
// secrets (CHIME_SMTP_PASSWORD, CHIME_API_TOKEN, CHIME_DATABASE_DSN). It
// starts from an allowlist of the server's variables — PATH (a standard
// one when the server has none), HOME, USER, LOGNAME, SHELL, LANG,
// LANGUAGE, LC_*, TZ and TMPDIR — and params.env is added over it.
// params.env may not name a CHIME_* variable, in any case. A broadcast
// definition's job (one per node, see tasks.Job.ShardIndex) also gets
// CHIME_SHARD_INDEX (0-based) and CHIME_SHARD_TOTAL, to split its work by.
//
// The child runs in its own process group so that signals reach everything
// it started: Pause sends SIGSTOP to the group, Resume SIGCONT, and Stop or
// a timeout sends SIGTERM (with SIGCONT, so a paused group can act on it),
// then SIGKILL after kill_grace. When the child exits the group is killed,
// so nothing it left in the background outlives the job.
//
// The last 64 KiB of stdout and of stderr become the job's result; each
// line is also logged (stdout at Info, stderr at Warn), up to 1000 lines a
// stream.
package shell
