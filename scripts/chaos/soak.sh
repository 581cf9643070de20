#!/usr/bin/env bash
# Chaos soak: three real `chime serve` nodes, each behind its own fault
# proxy (internal/testsupport/faultproxy), under 100 every-second schedules
# and long ad-hoc jobs, with faults injected at random for DURATION: kill -9
# and restart, SIGSTOP/SIGCONT, a node's link blackholed, every connection
# cut (a database restart or failover as the nodes see it), 200 ms latency.
# It ends with the audit: no fire twice, no second lost, nothing unfinished,
# every long job (requests_recovery) succeeded. See docs/failover.md.
#
#   scripts/chaos/soak.sh [DURATION] [mysql|postgres]     (default 30m mysql)
#
# It needs the test databases scripts/test.sh sets up (CHIME_TEST_MYSQL_DSN,
# CHIME_TEST_POSTGRES_DSN). CI runs the same test for 60 s as part of the
# suite (TestChaosSoak's default).
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-30m}
db=${2:-mysql}
: "${CHIME_TEST_MYSQL_DSN:=chime_test:chime_test@tcp(127.0.0.1:3306)/chime_test}"
: "${CHIME_TEST_POSTGRES_DSN:=postgres://postgres@127.0.0.1:5432/chime_test?sslmode=disable}"
export CHIME_TEST_MYSQL_DSN CHIME_TEST_POSTGRES_DSN
export CHIME_CLUSTERTEST_SOAK="$duration" CHIME_CLUSTERTEST_SOAK_DB="$db"
# go test's own timeout: the soak plus time to start, settle and audit.
case "$duration" in
  *h) secs=$(( ${duration%h} * 3600 )) ;;
  *m) secs=$(( ${duration%m} * 60 )) ;;
  *s) secs=${duration%s} ;;
  *) echo "DURATION is a whole number of s, m or h, e.g. 30m" >&2; exit 2 ;;
esac
go test -count=1 -v -timeout "$((secs + 600))s" -run '^TestChaosSoak$' ./internal/testsupport/clustertest/ 2>&1 |
  grep --line-buffered -v '^\s*{'
