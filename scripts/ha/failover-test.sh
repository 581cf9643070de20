#!/usr/bin/env bash
# Failover test on a real HA engine: installs etcd, Patroni and HAProxy
# from Debian's packages when they are missing, then runs
# TestPatroniFailover (three chime nodes on a Patroni cluster started by
# scripts/ha/patroni.sh; the primary killed -9 three times and switched
# over three times; the audit at the end). It takes several minutes and
# starts ten processes, so CI does not run it. See docs/failover.md.
#
#   scripts/ha/failover-test.sh [go test flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null; then
	scripts/ha/patroni.sh install
fi
export CHIME_TEST_PATRONI=1
go test -count=1 -v -timeout 40m -run '^TestPatroniFailover$' "$@" ./internal/testsupport/clustertest/ 2>&1 |
	grep --line-buffered -v '^\s*{'
