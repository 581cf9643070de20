#!/usr/bin/env bash
# A three-node MariaDB Galera cluster for failover tests, from Debian's
# packages (mariadb-server, galera-4, rsync for the state transfer), used
# single-writer: HAProxy sends every connection to the first node up of
# g1, g2, g3 (the others are backups) and, when a preferred node returns,
# cuts the sessions on the backup, so that at no time do two nodes take
# writes (the usual advice for Galera: no certification conflicts). The
# check is a TCP one; production would use a wsrep-aware check
# (clustercheck), so that a node still joining gets no connections. Everything runs on
# loopback with data directories of its own; nothing touches a MariaDB
# already running on 3306. See docs/databases.md.
#
#   scripts/ha/galera.sh up DIR            bootstrap g1, join g2 and g3, start HAProxy
#   scripts/ha/galera.sh down DIR          stop it all
#   scripts/ha/galera.sh status DIR        each node's wsrep state
#   scripts/ha/galera.sh wait-synced DIR   wait until every running node is Synced and HAProxy sees it up
#   scripts/ha/galera.sh writer DIR        the node HAProxy sends writes to now (g1..g3)
#   scripts/ha/galera.sh kill-writer DIR   kill -9 the writer; print its name
#   scripts/ha/galera.sh start DIR NODE    start a node again (it rejoins by IST or SST)
#   scripts/ha/galera.sh dsn DIR           the DSN chime uses (through HAProxy, database chime)
#
# Ports: MariaDB CHIME_GALERA_PORT, +1, +2 (13306-13308); Galera
# replication 14567+10*i, IST +1, SST +2; HAProxy CHIME_GALERA_PROXY_PORT
# (13400).
set -euo pipefail

port=${CHIME_GALERA_PORT:-13306}
proxy_port=${CHIME_GALERA_PROXY_PORT:-13400}
gport=${CHIME_GALERA_GCOMM_PORT:-14567}
provider=${CHIME_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
nodes=(g1 g2 g3)
# As root, mariadbd runs as mysql: the rsync state transfer's daemon drops
# root for nobody, who could not enter a root-owned data directory.
runas=$(id -un)
[ "$(id -u)" = 0 ] && runas=mysql

die() { echo "galera.sh: $*" >&2; exit 1; }
idx() { case "$1" in g1) echo 0 ;; g2) echo 1 ;; g3) echo 2 ;; *) die "no node $1 (g1, g2, g3)" ;; esac; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
sql() { mariadb --no-defaults -h127.0.0.1 -P"$1" -uroot -N -B -e "$2"; }

write_config() {
	local dir=$1 n=$2 i
	i=$(idx "$n")
	cat >"$dir/$n.cnf" <<EOF
[mariadbd]
datadir=$dir/$n/data
port=$((port + i))
bind-address=127.0.0.1
socket=$dir/$n/mysqld.sock
pid-file=$dir/$n/mysqld.pid
log-error=$dir/$n.err
user=$runas
skip-name-resolve
innodb-buffer-pool-size=64M
max-connections=500
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=$provider
wsrep_cluster_name=chime-galera
wsrep_cluster_address=gcomm://127.0.0.1:$gport,127.0.0.1:$((gport + 10)),127.0.0.1:$((gport + 20))
wsrep_node_name=$n
wsrep_node_address=127.0.0.1:$((gport + 10 * i))
wsrep_provider_options=gmcast.listen_addr=tcp://127.0.0.1:$((gport + 10 * i));ist.recv_addr=127.0.0.1:$((gport + 10 * i + 1));evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;gcache.size=64M
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((gport + 10 * i + 2))
EOF
}

write_haproxy() {
	local dir=$1 i
	{
		cat <<EOF
global
  maxconn 600
  pidfile $dir/haproxy.pid
  stats socket $dir/haproxy.sock mode 600 level admin
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
listen writer
  bind 127.0.0.1:$proxy_port
  default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions
EOF
		for i in 0 1 2; do
			b=""
			[ "$i" -gt 0 ] && b=" backup"
			echo "  server ${nodes[$i]} 127.0.0.1:$((port + i)) check$b"
		done
	} >"$dir/haproxy.cfg"
}

start_node() { # DIR NODE [--wsrep-new-cluster]
	local dir=$1 n=$2 i
	i=$(idx "$n")
	alive "$dir/$n.pid" && return
	if [ ! -d "$dir/$n/data/mysql" ]; then
		mkdir -p "$dir/$n"
		chown "$runas": "$dir/$n"
		mariadb-install-db --no-defaults --datadir="$dir/$n/data" --user="$runas" \
			--auth-root-authentication-method=normal --skip-test-db >"$dir/$n.install.log" 2>&1
	fi
	setsid mariadbd --defaults-file="$dir/$n.cnf" "${@:3}" >>"$dir/$n.out" 2>&1 </dev/null &
	echo $! >"$dir/$n.pid"
	for _ in $(seq 600); do
		[ "$(sql $((port + i)) "SHOW STATUS LIKE 'wsrep_ready'" 2>/dev/null | cut -f2)" = ON ] && return
		alive "$dir/$n.pid" || die "$n exited; see $dir/$n.err"
		sleep 0.2
	done
	die "$n not ready after 120 s; see $dir/$n.err"
}

status() {
	local dir=$1 i
	for i in 0 1 2; do
		printf '%s ' "${nodes[$i]}"
		sql $((port + i)) "SELECT GROUP_CONCAT(VARIABLE_NAME, '=', VARIABLE_VALUE SEPARATOR ' ') FROM information_schema.GLOBAL_STATUS
			WHERE VARIABLE_NAME IN ('wsrep_cluster_size','wsrep_cluster_status','wsrep_local_state_comment','wsrep_ready')" 2>/dev/null || echo down
	done
}

writer() { # the node HAProxy sends connections to: the first one up
	local dir=$1 i
	for i in 0 1 2; do
		if echo "show servers state writer" | socat - "UNIX-CONNECT:$dir/haproxy.sock" 2>/dev/null |
			awk -v n="${nodes[$i]}" '$4 == n && $6 == 2 { ok = 1 } END { exit !ok }'; then
			echo "${nodes[$i]}"
			return
		fi
	done
}

kill_node() {
	local dir=$1 n=$2
	alive "$dir/$n.pid" || return 0
	kill -KILL "$(cat "$dir/$n.pid")"
	for _ in $(seq 100); do alive "$dir/$n.pid" || break; sleep 0.05; done
	rm -f "$dir/$n.pid"
}

cmd=${1:-}
[ -n "${2:-}" ] || { sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }
mkdir -p "$2"
chmod 755 "$2"
dir=$(cd "$2" && pwd)
case "$cmd" in
up)
	command -v mariadbd >/dev/null || PATH=$PATH:/usr/sbin
	[ -f "$provider" ] || die "no Galera provider at $provider: apt-get install galera-4 rsync"
	for n in "${nodes[@]}"; do write_config "$dir" "$n"; done
	write_haproxy "$dir"
	start_node "$dir" g1 --wsrep-new-cluster
	sql "$port" "CREATE DATABASE IF NOT EXISTS chime CHARACTER SET utf8mb4"
	start_node "$dir" g2
	start_node "$dir" g3
	if ! alive "$dir/haproxy.pid"; then
		haproxy -D -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 || die "haproxy did not start; see $dir/haproxy.log"
	fi
	status "$dir"
	;;
down)
	alive "$dir/haproxy.pid" && kill "$(cat "$dir/haproxy.pid")"
	for n in "${nodes[@]}"; do
		alive "$dir/$n.pid" && kill -TERM "$(cat "$dir/$n.pid")"
	done
	for n in "${nodes[@]}"; do
		for _ in $(seq 300); do alive "$dir/$n.pid" || break; sleep 0.1; done
		kill_node "$dir" "$n"
		rm -f "$dir/$n.pid"
	done
	;;
status) status "$dir" ;;
wait-synced) # every running node Synced, and up in HAProxy's eyes
	for _ in $(seq 600); do
		running=0
		for n in "${nodes[@]}"; do alive "$dir/$n.pid" && running=$((running + 1)); done
		up=$(echo "show servers state writer" | socat - "UNIX-CONNECT:$dir/haproxy.sock" 2>/dev/null | awk '$6 == 2' | wc -l)
		[ "$running" -ge 2 ] && [ "$up" = "$running" ] &&
			[ "$(status "$dir" | grep -c 'COMMENT=Synced.*READY=ON')" = "$running" ] && exit 0
		sleep 0.2
	done
	die "the running nodes were not all Synced within 120 s"
	;;
writer) writer "$dir" ;;
kill-writer)
	w=$(writer "$dir")
	[ -n "$w" ] || die "no writer to kill"
	kill_node "$dir" "$w"
	echo "$w"
	;;
start) [ -n "${3:-}" ] || die "usage: $0 start DIR NODE"; start_node "$dir" "$3" ;;
dsn) echo "root@tcp(127.0.0.1:$proxy_port)/chime?timeout=3s" ;;
*) die "unknown command $cmd" ;;
esac
