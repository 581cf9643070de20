#!/usr/bin/env bash
# The newcomer's walk-through: runs the README's quick start exactly as
# written (the fenced blocks after <!-- walkthrough:install -->,
# <!-- walkthrough:serve --> and <!-- walkthrough:client -->) in a temporary
# directory with a temporary HOME, the client block one line a step, and
# checks each step by what that step alone printed: the definition and the
# schedule are created, the trigger writes job 1, the follow prints the
# job's own "hello from chime" line and ends with its success, the list
# shows it succeeded. Any failure exits non-zero, so the README cannot
# drift from what works.
#
# The one liberty: CHIME_API_ADDR picks a free port instead of 8080, which
# another process may hold; the CLI finds the server through it as well.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
readme="$repo/README.md"

# block NAME [FILE] prints the lines of the fenced block after
# <!-- walkthrough:NAME --> in FILE (the README by default).
block() {
  awk -v m="<!-- walkthrough:$1 -->" '
    $0 == m { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "${2:-$readme}"
}

install="$(block install)"
version="$(block version)"
serve="$(block serve)"
client="$(block client)"
for b in install version serve client; do
  if [[ -z "${!b}" ]]; then
    echo "walkthrough: README.md has no <!-- walkthrough:$b --> block" >&2
    exit 1
  fi
done
# docs/workflows.md's worked example, run after the quick start.
workflows="$repo/docs/workflows.md"
etl_yaml="$(block etl-yaml "$workflows")"
etl="$(block etl "$workflows")"
if [[ -z "$etl_yaml" || -z "$etl" ]]; then
  echo "walkthrough: docs/workflows.md has no <!-- walkthrough:etl-yaml --> or <!-- walkthrough:etl --> block" >&2
  exit 1
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "walkthrough: $*" >&2
  if [[ -f "$work/serve.log" ]]; then
    echo "--- chime serve's log (last 40 lines)" >&2
    tail -n 40 "$work/serve.log" >&2
  fi
  exit 1
}

# Install as the README says, into a bin directory of our own. The Go
# caches stay the user's: a cold build would cost minutes.
mkdir -p "$work/bin" "$work/home" "$work/run"
(cd "$repo" && GOBIN="$work/bin" bash -euo pipefail -c "$install") || fail "the install block failed"
[[ -x "$work/bin/chime" ]] || fail "the install block did not produce a chime binary"
# The Install section's check of the binary: which chime, and the schema
# it knows (the newest migration in sql/).
schema=$(ls "$repo/sql/sqlite" | sed -n 's/^0*\([0-9][0-9]*\)_.*\.sql$/\1/p' | sort -n | tail -1)
(cd "$work" && PATH="$work/bin:$PATH" bash -euo pipefail -c "$version") >"$work/version.out" 2>&1 ||
  fail "the version block failed: $(cat "$work/version.out")"
grep -Eq '^chime [^ ]+$' "$work/version.out" || fail "chime version did not print its version: $(cat "$work/version.out")"
grep -Eq "^schema: $schema\$" "$work/version.out" || fail "chime version did not print schema $schema: $(cat "$work/version.out")"

# From here on, a newcomer's fresh machine: nothing in HOME, chime on PATH,
# an empty working directory.
export PATH="$work/bin:$PATH" HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config"
unset CHIME_API_URL CHIME_API_TOKEN CHIME_API_TOKEN_FILE CHIME_DATABASE_DRIVER CHIME_DATABASE_DSN
port=""
for _ in $(seq 1 20); do
  p=$((20000 + RANDOM % 20000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    port=$p
    break
  fi
done
[[ -n "$port" ]] || fail "no free port found"
export CHIME_API_ADDR="127.0.0.1:$port"
cd "$work/run"

bash -euo pipefail -c "exec $serve" >"$work/serve.log" 2>&1 &
server_pid=$!

# A real server starting: poll until the API answers (or the server died).
ready=0
for _ in $(seq 1 150); do
  kill -0 "$server_pid" 2>/dev/null || fail "chime serve exited during start"
  if chime nodes >/dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 0.2
done
[[ $ready -eq 1 ]] || fail "the API did not answer within 30 s"

# The client block runs one line a step, each step's output kept apart, so
# that a check reads only what the step it checks printed: the definition's
# echo of its params says "hello from chime" too, and a check over the
# block's whole output could not tell whether the follow printed it.
steps=()
while IFS= read -r line; do
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  [[ "$line" == *\\ ]] && fail "the client block continues a line with a backslash; the walk-through runs it one line a step"
  steps+=("$line")
done <<<"$client"

# step PATTERN prints the number of the one step whose command matches the
# extended regular expression PATTERN; a block without it fails.
step() {
  local i found=""
  for i in "${!steps[@]}"; do
    if [[ "${steps[$i]}" =~ $1 ]]; then
      [[ -z "$found" ]] || fail "the client block has more than one step matching '$1'"
      found=$i
    fi
  done
  [[ -n "$found" ]] || fail "the client block has no step matching '$1'"
  echo "$found"
}
def=$(step '^chime definition add hello ')
sched=$(step '^chime schedule add hello-10s ')
trig=$(step '^chime schedule trigger hello-10s')
follow=$(step '^chime job logs 1 (--follow|-f)')
jobs=$(step '^chime job list')

for i in "${!steps[@]}"; do
  echo "\$ ${steps[$i]}"
  timeout 60 bash -euo pipefail -c "${steps[$i]}" >"$work/step$i.out" 2>&1 || {
    cat "$work/step$i.out" >&2
    fail "the client block's step '${steps[$i]}' failed"
  }
  cat "$work/step$i.out"
done

# out N prints step N's output.
out() { cat "$work/step$1.out"; }
out "$def" | grep -Eq '^name: +hello$' || fail "'${steps[$def]}' did not print the definition hello"
out "$sched" | grep -Eq '^name: +hello-10s$' || fail "'${steps[$sched]}' did not print the schedule hello-10s"
out "$trig" | grep -Eq '^id: +1$' || fail "'${steps[$trig]}' did not print job 1"
# The job's own output line, not the command that printed it: a line of
# the log is "time  level  message".
out "$follow" | grep -Eq '^[^ ]+Z  info   hello from chime( stream=stdout)?$' ||
  fail "'${steps[$follow]}' did not print the job's line 'hello from chime'"
out "$follow" | tail -n 1 | grep -Eq '^[^ ]+Z  info   succeeded \(attempt 1, ' ||
  fail "'${steps[$follow]}' did not end with the job's success"
out "$jobs" | grep -Eq '^1 +hello-10s +hello +succeeded ' || fail "'${steps[$jobs]}' does not list job 1 as succeeded"

# And apart from the block: the job's row and its log as they stay.
status="$(chime job show 1 -o json | sed -n 's/^  "status": "\(.*\)",$/\1/p')"
[[ "$status" == succeeded ]] || fail "job 1 is '$status', not succeeded"
chime job logs 1 >"$work/logs.out" 2>&1 || fail "chime job logs 1 failed: $(cat "$work/logs.out")"
grep -Eq '^[^ ]+Z  info   hello from chime( stream=stdout)?$' "$work/logs.out" ||
  fail "chime job logs 1 does not show the job's line 'hello from chime'"

# docs/workflows.md's nightly ETL, as written: the file, then its commands
# one line a step, then run 1 must succeed with every step but the
# failure-only cleanup succeeded.
printf '%s\n' "$etl_yaml" >etl.yaml
while IFS= read -r line; do
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  echo "\$ $line"
  timeout 60 bash -euo pipefail -c "$line" >"$work/etl.out" 2>&1 || {
    cat "$work/etl.out" >&2
    fail "docs/workflows.md's step '$line' failed"
  }
  cat "$work/etl.out"
done <<<"$etl"
done_run=0
for _ in $(seq 1 150); do
  chime workflow status 1 >"$work/etl-status.out" 2>&1 || fail "chime workflow status 1 failed: $(cat "$work/etl-status.out")"
  if grep -Eq '^run 1 of nightly-etl: (succeeded|failed|canceled)' "$work/etl-status.out"; then
    done_run=1
    break
  fi
  sleep 0.2
done
[[ $done_run -eq 1 ]] || fail "the ETL run did not end within 30 s: $(cat "$work/etl-status.out")"
cat "$work/etl-status.out"
grep -Eq '^run 1 of nightly-etl: succeeded' "$work/etl-status.out" || fail "the ETL run did not succeed"
for s in extract by-region by-product load; do
  grep -Eq "^$s +succeeded +[0-9]+\$" "$work/etl-status.out" || fail "the ETL run's step $s did not succeed"
done
grep -Eq '^cleanup +skipped +-$' "$work/etl-status.out" || fail "the ETL run's cleanup step was not skipped"

kill -TERM "$server_pid"
wait "$server_pid" || fail "chime serve did not exit cleanly on SIGTERM"
server_pid=""
grep -q 'chime node stopped' "$work/serve.log" || fail "chime serve did not log its stop"
echo "walkthrough: the README's quick start and docs/workflows.md's ETL example work"
