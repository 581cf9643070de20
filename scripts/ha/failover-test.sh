#!/usr/bin/env bash
# Failover tests on real HA engines, under three chime nodes, 100
# every-second schedules, ad-hoc and long jobs, ending with the audit (no
# fire twice, no second lost, nothing unfinished):
#
#   scripts/ha/failover-test.sh [patroni]   TestPatroniFailover: scripts/ha/patroni.sh's
#                                           cluster; the primary killed -9 three times and
#                                           switched over three times
#   scripts/ha/failover-test.sh galera      TestGaleraFailover: scripts/ha/galera.sh's
#                                           cluster; the writer killed -9 three times, and
#                                           each time started again (HAProxy fails back)
#
# It installs etcd, Patroni and HAProxy from Debian's packages when they
# are missing (Galera needs galera-4, rsync and haproxy). Each run takes
# several minutes and starts about ten processes, so CI does not run it.
# See docs/failover.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
engine=${1:-patroni}
case "$engine" in
patroni)
	if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null || ! command -v haproxy >/dev/null; then
		scripts/ha/patroni.sh install
	fi
	export CHIME_TEST_PATRONI=1
	run=TestPatroniFailover
	;;
galera)
	if [ ! -f /usr/lib/galera/libgalera_smm.so ] || ! command -v haproxy >/dev/null || ! command -v rsync >/dev/null; then
		apt-get install -y galera-4 rsync socat haproxy
	fi
	export CHIME_TEST_GALERA=1
	run=TestGaleraFailover
	;;
*) echo "usage: $0 [patroni|galera]" >&2; exit 2 ;;
esac
go test -count=1 -v -timeout 40m -run "^$run\$" ./internal/testsupport/clustertest/ 2>&1 |
	grep --line-buffered -v '^\s*{'
