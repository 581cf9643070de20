#!/usr/bin/env bash
# `chime bench drain` against the server's ceiling (bench/ceiling: the
# same pending rows in chime's jobs table, drained with nothing but a
# batched claim and a batched completion), alternated run by run so that
# both see the same load: in odd pairs the ceiling runs first, in even
# pairs chime. Every run has a fresh database of its own, dropped after.
# Prints one Markdown row per pair with the 1-minute load average before
# each run, then the medians; the raw key=value lines go to the log named
# at the end.
#
# Settings (environment):
#   DRIVERS         "mysql postgres" (default both)
#   PAIRS           pairs per driver (3)
#   JOBS, POOL      pending jobs (20000) and pool (100): CHIME_TASKENGINE_POOL_SIZE
#                   and the ceiling's -pool
#   MYSQL_SERVER    go-sql-driver form without the database: root@tcp(127.0.0.1:3306)
#   PG_SERVER       postgres://postgres@127.0.0.1:5432 (sslmode=disable is added)
#   CEILING_MYSQL, CEILING_POSTGRES
#                   the ceiling's knobs on each (the best found, see
#                   docs/benchmarks.md, "The server's ceiling"); with
#                   lists the ceiling runs every combination and the best
#                   line is its figure
#   CPUPROFILE=1    chime's runs also write a CPU profile (named in the log)
set -euo pipefail
cd "$(dirname "$0")/.."

drivers="${DRIVERS:-mysql postgres}"
pairs="${PAIRS:-3}" jobs="${JOBS:-20000}" pool="${POOL:-100}"
mysql_server="${MYSQL_SERVER:-root@tcp(127.0.0.1:3306)}"
pg_server="${PG_SERVER:-postgres://postgres@127.0.0.1:5432}"
read -r -a knobs_mysql <<<"${CEILING_MYSQL:--claimers 2 -claim-batch 50 -completers 2 -complete-batch 100}"
read -r -a knobs_postgres <<<"${CEILING_POSTGRES:--claimers 4 -claim-batch 25 -completers 1 -complete-batch 100}"

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
log="${CEILING_LOG:-$(mktemp -t ceiling.XXXXXX.log)}"
echo "building (log: $log)" >&2
go build -o "$bin/chime" ./cmd/chime
go build -o "$bin/ceiling" ./bench/ceiling

load() { cut -d' ' -f1 /proc/loadavg; }
get() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
dsn() { # DRIVER DATABASE
  if [[ "$1" == mysql ]]; then echo "$mysql_server/$2"; else echo "$pg_server/$2?sslmode=disable"; fi
}

ceiling() { # DRIVER
  local -n k="knobs_$1"
  "$bin/ceiling" -driver "$1" -dsn "$(dsn "$1" chime_ceiling)" -jobs "$jobs" -pool "$pool" -pause 0s "${k[@]}" 2>>"$log"
}

chime_drain() { # DRIVER
  local db out rc=0 prof=()
  db="chime_drain_$(date +%s%N | tail -c 10)"
  if [[ "${CPUPROFILE:-}" == 1 ]]; then
    prof=(--cpuprofile "${log%.log}.$db.pprof")
    echo "cpu profile: ${prof[1]}" >>"$log"
  fi
  out="$(CHIME_DATABASE_DRIVER="$1" CHIME_DATABASE_DSN="$(dsn "$1" "$db")" CHIME_TASKENGINE_POOL_SIZE="$pool" \
    CHIME_LOG_LEVEL=warn "$bin/chime" bench drain --jobs "$jobs" "${prof[@]}" 2>>"$log")" || rc=$?
  "$bin/ceiling" -driver "$1" -dsn "$(dsn "$1" x)" -dropdb "$db" 2>>"$log" || true
  echo "$out"
  return "$rc"
}

rows=()
declare -A ratios
for ((pair = 1; pair <= pairs; pair++)); do
  for d in $drivers; do
    order=(ceiling chime_drain)
    ((pair % 2)) || order=(chime_drain ceiling)
    for what in "${order[@]}"; do
      l0="$(load)"
      out="$("$what" "$d")"
      echo "$what $d pair $pair (load $l0): $out" | tee -a "$log" >&2
      if [[ "$what" == ceiling ]]; then
        c_rate="$(sed -n 's/.* jobs_per_s=\([0-9.]*\).*/\1/p' <<<"$out" | sort -n | tail -1)" c_load="$l0"
      else
        d_rate="$(get "$out" jobs_per_s)" d_load="$l0"
      fi
      sleep 3
    done
    pct="$(awk -v a="$d_rate" -v b="$c_rate" 'BEGIN { printf "%.0f", 100 * a / b }')"
    ratios[$d]+="$pct "
    rows+=("| $d | $pair | ${order[0]%_drain} first | $c_rate ($c_load) | $d_rate ($d_load) | $pct % |")
  done
done

echo
echo "$(nproc) cores; $(date -u +%F); jobs $jobs, pool $pool"
echo
echo "| Server | Pair | Order | Ceiling jobs/s (load) | chime drain jobs/s (load) | chime / ceiling |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
for d in $drivers; do
  echo "$d: chime / ceiling median $(tr ' ' '\n' <<<"${ratios[$d]}" | sed '/^$/d' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') %"
done
echo "raw lines: $log" >&2
