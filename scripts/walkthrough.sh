#!/usr/bin/env bash
# The newcomer's walk-through: runs the README's quick start exactly as
# written (the fenced blocks after <!-- walkthrough:install -->,
# <!-- walkthrough:serve --> and <!-- walkthrough:client -->) in a temporary
# directory with a temporary HOME, and checks that the first job succeeded
# and that `chime job logs` shows its line. Any failure exits non-zero, so
# the README cannot drift from what works.
#
# The one liberty: CHIME_API_ADDR picks a free port instead of 8080, which
# another process may hold; the CLI finds the server through it as well.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
readme="$repo/README.md"

# block NAME prints the lines of the fenced block after <!-- walkthrough:NAME -->.
block() {
  awk -v m="<!-- walkthrough:$1 -->" '
    $0 == m { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$readme"
}

install="$(block install)"
serve="$(block serve)"
client="$(block client)"
for b in install serve client; do
  if [[ -z "${!b}" ]]; then
    echo "walkthrough: README.md has no <!-- walkthrough:$b --> block" >&2
    exit 1
  fi
done

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

timeout 60 bash -euo pipefail -c "$client" >"$work/client.out" 2>&1 || {
  cat "$work/client.out" >&2
  fail "the client block failed"
}
cat "$work/client.out"

status="$(chime job show 1 -o json | sed -n 's/^  "status": "\(.*\)",$/\1/p')"
[[ "$status" == succeeded ]] || fail "job 1 is '$status', not succeeded"
chime job logs 1 | grep -q 'hello from chime' || fail "chime job logs 1 does not show the hello line"
grep -q 'hello from chime' "$work/client.out" || fail "the README's chime job logs line did not print the hello line"

kill -TERM "$server_pid"
wait "$server_pid" || fail "chime serve did not exit cleanly on SIGTERM"
server_pid=""
grep -q 'chime node stopped' "$work/serve.log" || fail "chime serve did not log its stop"
echo "walkthrough: the README's quick start works"
