#!/usr/bin/env bash
# What limits cost the drain (issue 26): `chime bench drain` on a fresh
# database per run, alternating three setups, ROUNDS times:
#   none     - no limit anywhere (the default queue as migrated);
#   unbound  - the default queue has max_running = 1,000,000: every
#              claim locks the queue's row, counts its active jobs and
#              admits, and the limit never binds;
#   rate     - the default queue starts at most RATE jobs a second: the
#              drain's jobs/s must come out at RATE (RATE_JOBS jobs).
# Usage: scripts/bench-limits.sh sqlite|mysql|postgres
# Knobs: ROUNDS=3 JOBS=20000 RATE=200 RATE_JOBS=2000 (0: no rate run)
# POOL=100, BIN=a built chime to run instead of building this tree's (to
# alternate two builds: ROUNDS=1, one call each, in turn).
# MySQL and PostgreSQL: the local servers as scripts/test.sh sets them up
# (MySQL's user chime_test, PostgreSQL's postgres), a database
# ${DB_PREFIX}_PID_N (DB_PREFIX=chime_t_limits) created and dropped per run.
set -euo pipefail
cd "$(dirname "$0")/.."
driver="${1:?usage: $0 sqlite|mysql|postgres}"
# The process id keeps two calls (or a database whose DROP failed: MariaDB
# under load sometimes leaves a stray trigger file behind) apart.
db="${DB_PREFIX:-chime_t_limits}_$$"
rounds="${ROUNDS:-3}" jobs="${JOBS:-20000}" rate="${RATE:-200}" rate_jobs="${RATE_JOBS:-2000}"
export CHIME_TASKENGINE_POOL_SIZE="${POOL:-100}" CHIME_LOG_LEVEL=warn
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ -n "${BIN:-}" ]; then
  cp "$BIN" "$work/chime"
else
  go build -o "$work/chime" ./cmd/chime
fi

mysql_cli() { mariadb -h 127.0.0.1 -u chime_test -pchime_test "$@"; }
n=0
fresh() { # prints the DSN of a new empty database number n
  case "$driver" in
  sqlite) echo "$work/bench$n.db" ;;
  mysql)
    mysql_cli -e "DROP DATABASE IF EXISTS ${db}_$n; CREATE DATABASE ${db}_$n"
    echo "chime_test:chime_test@tcp(127.0.0.1:3306)/${db}_$n" ;;
  postgres)
    psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS ${db}_$n" -c "CREATE DATABASE ${db}_$n"
    echo "postgres://postgres@127.0.0.1:5432/${db}_$n?sslmode=disable" ;;
  esac
}
run_sql() { # DSN SQL
  case "$driver" in
  sqlite) sqlite3 "$1" "$2" 2>/dev/null || python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$1" "$2" ;;
  mysql) mysql_cli "${db}_$n" -e "$2" ;;
  postgres) psql -h 127.0.0.1 -U postgres -d "${db}_$n" -qc "$2" ;;
  esac
}
drop() {
  case "$driver" in
  mysql) mysql_cli -e "DROP DATABASE IF EXISTS ${db}_$n" || echo "could not drop ${db}_$n: drop it by hand" >&2 ;;
  postgres) psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS ${db}_$n" || echo "could not drop ${db}_$n: drop it by hand" >&2 ;;
  esac
}
one() { # SETUP
  local dsn
  n=$((n + 1))
  dsn="$(fresh)"
  export CHIME_DATABASE_DRIVER="$driver" CHIME_DATABASE_DSN="$dsn"
  "$work/chime" migrate >/dev/null
  local count="$jobs"
  case "$1" in
  unbound)
    # The bench writes its definition itself; a trigger-free way to give
    # it a limit is the default queue's and every definition's default.
    run_sql "$dsn" "UPDATE queues SET max_running = 1000000 WHERE name = 'default'" ;;
  rate)
    run_sql "$dsn" "UPDATE queues SET rate_limit = $rate, rate_period_ms = 1000 WHERE name = 'default'"
    count="$rate_jobs" ;;
  esac
  local load
  load="$(cut -d' ' -f1 /proc/loadavg)"
  echo "setup=$1 load=$load $("$work/chime" bench drain --jobs "$count" | grep '^bench=')"
  drop
}
for _ in $(seq 1 "$rounds"); do
  one none
  one unbound
done
if [ "$rate_jobs" -gt 0 ]; then
  one rate
fi
