#!/usr/bin/env bash
# chime against River on the same PostgreSQL server, scenario by scenario:
# builds `chime`, app's test binary (for BenchmarkInsertToStart) and the
# River harness (bench/river, a module of its own so River stays out of
# chime's go.mod), then for each scenario runs chime and River one after
# the other, each on a fresh database of its own, and prints one Markdown
# table with the 1-minute load average before and after each run. Every
# raw key=value line goes to the log file named at the end.
#
# Settings (environment):
#   PEER_BENCH_DSN   a PostgreSQL URL on the server (the database in it is
#                    only used to create and drop the bench's own); default
#                    $CHIME_TEST_POSTGRES_DSN, else postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
#   SCENARIOS        default "drain continuous steady insert"
#   JOBS, POOL       drain: pending jobs (20000) and worker pool (100)
#   RATES, RATE_POOL, DURATION
#                    continuous: every-second schedules / periodic jobs,
#                    one run per rate ("16000"), pool (1000), window (15s)
#   PERIODIC, PERIODIC_DURATION
#                    steady: every-second schedules (200) for 30s, pool POOL
#   INSERTS          insert: rows inserted by plain SQL, one every 20 ms
#                    (200, fixed by BenchmarkInsertToStart), two idle nodes
#                    / clients at chime's default pool (16)
#   FETCH_COOLDOWN, FETCH_POLL
#                    River's FetchCooldown and FetchPollInterval (2ms, 20ms:
#                    "tuned"; 100ms and 1s are River's defaults)
#   ROUNDS           how many times the whole sequence runs (1)
#   PROFILE=1        beside each drain, continuous and steady run, `river-bench
#                    watch` samples pg_stat_activity every 10 ms and diffs the
#                    database's, tables' and trigger functions' counters (no
#                    pg_stat_statements, no server restart); the profiles go
#                    to the log. Sampling costs the server some CPU: compare
#                    figures of runs made the same way.
#
# chime runs with its defaults (poll 4 s, 32 connections, PostgreSQL
# NOTIFY) except the pool and log.level=warn (River's harness logs warnings
# only; chime logs each job at info). Both get 32 connections.
set -euo pipefail
cd "$(dirname "$0")/.."

dsn="${PEER_BENCH_DSN:-${CHIME_TEST_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}}"
scenarios="${SCENARIOS:-drain continuous steady insert}"
jobs="${JOBS:-20000}" pool="${POOL:-100}"
rates="${RATES:-16000}" rate_pool="${RATE_POOL:-1000}" duration="${DURATION:-15s}"
periodic="${PERIODIC:-200}" periodic_duration="${PERIODIC_DURATION:-30s}"
inserts="${INSERTS:-200}"
cooldown="${FETCH_COOLDOWN:-2ms}" poll="${FETCH_POLL:-20ms}"
rounds="${ROUNDS:-1}"

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
log="${PEER_BENCH_LOG:-$(mktemp -t peer-bench.XXXXXX.log)}"
echo "building (log: $log)" >&2
go build -o "$bin/chime" ./cmd/chime
go test -c -o "$bin/app.test" ./app/
(cd bench/river && go build -o "$bin/river-bench" .)
rb=("$bin/river-bench" --dsn "$dsn")

load() { cut -d' ' -f1 /proc/loadavg; }
# get LINE KEY prints KEY's value in a key=value line.
get() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

newdb() { echo "${1}_$(date +%s%N | tail -c 10)"; }

# watch_start DB: with PROFILE=1, profiles DB from now until watch_stop.
watch_pid=""
watch_start() {
  [[ "${PROFILE:-}" == 1 ]] || return 0
  "${rb[@]}" --track-functions watch "$1" >"$bin/watch.out" 2>&1 &
  watch_pid=$!
  sleep 0.5 # track_functions applies to the sessions that connect after it
}
watch_stop() {
  [[ -n "$watch_pid" ]] || return 0
  kill -TERM "$watch_pid"
  wait "$watch_pid" || true
  watch_pid=""
  { echo "-- profile: $1"; cat "$bin/watch.out"; echo; } >>"$log"
}

# chime_bench POOL ARGS...: `chime bench ARGS` on a fresh database.
chime_bench() {
  local p="$1" db dsn_db out
  shift
  db="$(newdb chime_peer)"
  dsn_db="$("${rb[@]}" createdb "$db")"
  watch_start "$db"
  out="$(CHIME_DATABASE_DRIVER=postgres CHIME_DATABASE_DSN="$dsn_db" CHIME_TASKENGINE_POOL_SIZE="$p" \
    CHIME_LOG_LEVEL=warn "$bin/chime" bench "$@" 2>>"$log")" || { watch_stop "chime $*"; "${rb[@]}" dropdb "$db"; return 1; }
  watch_stop "chime $*"
  "${rb[@]}" dropdb "$db"
  echo "$out"
}

# chime_insert: BenchmarkInsertToStart on PostgreSQL (its own database),
# as a key=value line.
chime_insert() {
  local out
  out="$(CHIME_TEST_POSTGRES_DSN="$dsn" "$bin/app.test" -test.run '^$' -test.bench 'BenchmarkInsertToStart/postgres' \
    -test.benchtime 1x 2>>"$log")"
  echo "$out" >>"$log"
  awk '/^BenchmarkInsertToStart/ { for (i = 2; i <= NF; i++) { if ($i == "p50-ms") p50 = $(i-1); if ($i == "p99-ms") p99 = $(i-1) } }
    END { if (p50 == "") exit 1; printf "bench=insert driver=postgres start_p50_ms=%s start_p99_ms=%s\n", p50, p99 }' <<<"$out"
}

river() {
  local db out
  db="$(newdb river_peer)"
  watch_start "$db"
  # Kept until the watch is done with it.
  out="$("${rb[@]}" --db "$db" --keep --fetch-cooldown "$cooldown" --fetch-poll-interval "$poll" "$@" 2>>"$log")" ||
    { watch_stop "river $*"; "${rb[@]}" dropdb "$db"; return 1; }
  watch_stop "river $*"
  "${rb[@]}" dropdb "$db"
  echo "$out"
}

rows=()
# measure WHAT CHIME_CMD -- RIVER_CMD: runs both, one after the other,
# and prints their lines; sets c_line, r_line, c_load, r_load.
measure() {
  local what="$1" i
  shift
  local -a chime_cmd=() river_cmd=()
  for ((i = 1; i <= $#; i++)); do
    [[ "${!i}" == -- ]] && break
    chime_cmd+=("${!i}")
  done
  river_cmd=("${@:i+1}")
  echo "== $what" >&2
  local l0 l1
  l0="$(load)"
  c_line="$("${chime_cmd[@]}")"
  l1="$(load)"
  c_load="$l0→$l1"
  echo "chime (load $c_load): $c_line" | tee -a "$log" >&2
  l0="$(load)"
  r_line="$("${river_cmd[@]}")"
  l1="$(load)"
  r_load="$l0→$l1"
  echo "river (load $r_load): $r_line" | tee -a "$log" >&2
}

for ((round = 1; round <= rounds; round++)); do
  for sc in $scenarios; do
    case "$sc" in
    drain)
      measure "drain" chime_bench "$pool" drain --jobs "$jobs" -- river --workers "$pool" --jobs "$jobs" drain
      rows+=("| Drain $jobs pending no-op jobs, pool $pool: jobs/s | $(get "$c_line" jobs_per_s) | $(get "$r_line" jobs_per_s) | $c_load / $r_load |")
      ;;
    continuous)
      for rate in $rates; do
        measure "continuous $rate" chime_bench "$rate_pool" continuous --schedules "$rate" --duration "$duration" -- \
          river --workers "$rate_pool" --schedules "$rate" --duration "$duration" continuous
        cell() { echo "$(get "$1" jobs_per_s) ($(get "$1" missed) missed, $(get "$1" unfinished) unfinished)"; }
        rows+=("| Continuous: $rate every-second schedules / periodic jobs, pool $rate_pool, $duration: finished jobs/s | $(cell "$c_line") | $(cell "$r_line") | $c_load / $r_load |")
      done
      ;;
    steady)
      measure "steady" chime_bench "$pool" steady --schedules "$periodic" --duration "$periodic_duration" -- \
        river --workers "$pool" --schedules "$periodic" --duration "$periodic_duration" steady
      cell() { echo "$(get "$1" exec_p50_ms) / $(get "$1" exec_p99_ms) ($(get "$1" missed) missed)"; }
      rows+=("| Periodic: $periodic every-second jobs, pool $pool, $periodic_duration: Execute − scheduled_at p50 / p99 ms | $(cell "$c_line") | $(cell "$r_line") | $c_load / $r_load |")
      ;;
    insert)
      # Not profiled: BenchmarkInsertToStart names its own database.
      PROFILE=0 measure "insert" chime_insert -- river --clients 2 --workers 16 --jobs "$inserts" insert
      cell() { echo "$(get "$1" start_p50_ms) / $(get "$1" start_p99_ms)"; }
      rows+=("| Insert → start: $inserts rows by plain SQL, one every 20 ms, 2 idle nodes / clients: p50 / p99 ms | $(cell "$c_line") | $(cell "$r_line") | $c_load / $r_load |")
      ;;
    *)
      echo "unknown scenario $sc (want drain, continuous, steady, insert)" >&2
      exit 2
      ;;
    esac
  done
done

pcm="$(get "$r_line" plan_cache_mode)"
echo
echo "PostgreSQL server of $dsn, plan_cache_mode=$pcm; River $(get "$r_line" river) FetchCooldown $cooldown, FetchPollInterval $poll; $(nproc) cores; $(date -u +%F)"
echo
echo "| Scenario | chime | River | load (1 min) chime / River |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "raw lines: $log" >&2
