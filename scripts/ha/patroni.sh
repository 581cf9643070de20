#!/usr/bin/env bash
# A PostgreSQL HA cluster for failover tests, from Debian's packages only:
# one etcd, three PostgreSQL 15 instances managed by Patroni with
# synchronous replication (a commit is acknowledged only once a standby has
# it, so a failover cannot lose a committed fire), and HAProxy sending
# connections to whichever member is the primary. Everything listens on
# loopback, on ports of its own; nothing touches a PostgreSQL already
# running on 5432. See docs/failover.md.
#
#   scripts/ha/patroni.sh install                 apt-get install etcd-server patroni haproxy
#   scripts/ha/patroni.sh up DIR                  start it all, data and logs in DIR; waits for a primary
#   scripts/ha/patroni.sh down DIR                stop it all (DIR is left for post-mortems)
#   scripts/ha/patroni.sh status DIR              patronictl list
#   scripts/ha/patroni.sh leader DIR              print the primary's member name (pg1..pg3)
#   scripts/ha/patroni.sh kill-leader DIR         kill -9 the primary's Patroni and PostgreSQL; print its name
#   scripts/ha/patroni.sh start DIR MEMBER        start a member again (it rejoins as a replica)
#   scripts/ha/patroni.sh switchover DIR          patronictl switchover to the synchronous standby; print the new leader
#   scripts/ha/patroni.sh wait-healthy DIR        wait until all three stream, one of them synchronously
#   scripts/ha/patroni.sh dsn DIR [multi|haproxy] the DSN chime uses (database chime)
#
# Ports: etcd CHIME_HA_ETCD_PORT (12379, peers +1); PostgreSQL
# CHIME_HA_PG_PORT, +1, +2 (15432-15434); Patroni's REST API
# CHIME_HA_API_PORT, +1, +2 (18008-18010); HAProxy CHIME_HA_PROXY_PORT
# (15400). Short Patroni timings (ttl 10 s, loop_wait 1 s) make a failover
# take seconds, as in the tests; production keeps Patroni's defaults.
set -euo pipefail

etcd_port=${CHIME_HA_ETCD_PORT:-12379}
pg_port=${CHIME_HA_PG_PORT:-15432}
api_port=${CHIME_HA_API_PORT:-18008}
proxy_port=${CHIME_HA_PROXY_PORT:-15400}
pgbin=${CHIME_HA_PG_BIN:-/usr/lib/postgresql/15/bin}
scope=chime-ha
members=(pg1 pg2 pg3)

die() { echo "patroni.sh: $*" >&2; exit 1; }

# as_postgres runs a command as the postgres user when we are root:
# PostgreSQL refuses to run as root.
as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

idx() { # member name -> 0, 1, 2
	case "$1" in pg1) echo 0 ;; pg2) echo 1 ;; pg3) echo 2 ;; *) die "no member $1 (pg1, pg2, pg3)" ;; esac
}

write_member_config() {
	local dir=$1 name=$2 i
	i=$(idx "$name")
	cat >"$dir/$name.yml" <<EOF
scope: $scope
namespace: /chime/
name: $name
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$((api_port + i))
  connect_address: 127.0.0.1:$((api_port + i))
etcd:
  host: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: "on"
        max_connections: 200
        max_wal_senders: 10
        max_replication_slots: 10
        hot_standby: "on"
        wal_keep_size: 128MB
  initdb:
    - encoding: UTF8
    - auth-local: trust
    - auth-host: trust
postgresql:
  listen: 127.0.0.1:$((pg_port + i))
  connect_address: 127.0.0.1:$((pg_port + i))
  data_dir: $dir/$name/data
  bin_dir: $pgbin
  pgpass: $dir/$name/pgpass
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: $dir/$name
    shared_buffers: 32MB
EOF
}

write_haproxy_config() {
	local dir=$1 i
	{
		cat <<EOF
global
  maxconn 300
  pidfile $dir/haproxy.pid
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:$proxy_port
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
EOF
		for i in 0 1 2; do
			echo "  server ${members[$i]} 127.0.0.1:$((pg_port + i)) check port $((api_port + i))"
		done
	} >"$dir/haproxy.cfg"
}

pidfile_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_etcd() {
	local dir=$1
	pidfile_alive "$dir/etcd.pid" && return
	nohup etcd --name chime-ha --data-dir "$dir/etcd" --enable-v2=true \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
		--initial-cluster "chime-ha=http://127.0.0.1:$((etcd_port + 1))" >"$dir/etcd.log" 2>&1 &
	echo $! >"$dir/etcd.pid"
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && return
		sleep 0.1
	done
	die "etcd did not come up; see $dir/etcd.log"
}

start_member() {
	local dir=$1 name=$2
	pidfile_alive "$dir/$name.pid" && return
	mkdir -p "$dir/$name"
	chmod 700 "$dir/$name"
	[ "$(id -u)" = 0 ] && chown -R postgres: "$dir/$name" "$dir/$name.yml"
	# setsid: Patroni has a process group of its own, which kill-leader
	# kills whole; the postmaster has another (Patroni starts it in a
	# session of its own so that it outlives Patroni).
	local user=()
	[ "$(id -u)" = 0 ] && user=(runuser -u postgres --)
	setsid "${user[@]}" patroni "$dir/$name.yml" >>"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
}

patronictl_() { patronictl -c "$1/pg1.yml" "${@:2}"; }

# leader prints the member the Patroni cluster names leader, "" if none.
leader() {
	local dir=$1 i out
	for i in 0 1 2; do
		out=$(curl -fsS -m 2 "http://127.0.0.1:$((api_port + i))/cluster" 2>/dev/null) || continue
		python3 -c 'import json,sys
for m in json.load(sys.stdin).get("members", []):
    if m.get("role") == "leader" and m.get("state") == "running": print(m["name"])' <<<"$out" && return
	done
}

wait_leader() {
	local dir=$1 l
	for _ in $(seq 600); do
		l=$(leader "$dir")
		if [ -n "$l" ] && as_postgres "$pgbin/psql" -h 127.0.0.1 -p $((pg_port + $(idx "$l"))) -U postgres -Atc 'SELECT NOT pg_is_in_recovery()' postgres 2>/dev/null | grep -q t; then
			echo "$l"
			return
		fi
		sleep 0.2
	done
	die "no primary after 120 s; see $dir/pg*.log"
}

# wait_sync waits until every member is streaming and one is the
# synchronous standby, so that a failover right after up has a candidate.
wait_sync() {
	local dir=$1
	for _ in $(seq 600); do
		if patronictl_ "$dir" list -f json 2>/dev/null | python3 -c 'import json,sys
ms = json.load(sys.stdin)
ok = (len(ms) == 3 and all(m["State"] in ("running", "streaming") for m in ms)
      and [m["Role"] for m in ms].count("Leader") == 1 and any(m["Role"] == "Sync Standby" for m in ms)
      and all(isinstance(m.get("Lag in MB"), int) for m in ms if m["Role"] != "Leader"))
sys.exit(0 if ok else 1)'; then
			return
		fi
		sleep 0.2
	done
	die "the members did not all stream with a synchronous standby within 120 s"
}

up() {
	local dir=$1 l
	command -v patroni >/dev/null && command -v etcd >/dev/null || die "patroni and etcd are not installed: run $0 install"
	mkdir -p "$dir"
	chmod 755 "$dir"
	for n in "${members[@]}"; do write_member_config "$dir" "$n"; done
	write_haproxy_config "$dir"
	start_etcd "$dir"
	start_member "$dir" pg1
	l=$(wait_leader "$dir")
	as_postgres "$pgbin/psql" -h 127.0.0.1 -p $((pg_port + $(idx "$l"))) -U postgres -qc 'CREATE DATABASE chime' postgres 2>/dev/null || true
	start_member "$dir" pg2
	start_member "$dir" pg3
	wait_sync "$dir"
	if command -v haproxy >/dev/null && ! pidfile_alive "$dir/haproxy.pid"; then
		haproxy -D -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 || echo "haproxy did not start; see $dir/haproxy.log" >&2
	fi
	patronictl_ "$dir" list
}

kill_group() { # SIGKILL to a member's process group, then wait for it to be gone
	local pgid=$1
	kill -KILL -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 -- "-$pgid" 2>/dev/null || return 0
		sleep 0.05
	done
}

down() {
	local dir=$1 n
	pidfile_alive "$dir/haproxy.pid" && kill "$(cat "$dir/haproxy.pid")"
	for n in "${members[@]}"; do
		if pidfile_alive "$dir/$n.pid"; then
			kill -TERM "$(cat "$dir/$n.pid")" 2>/dev/null || true
		fi
	done
	for n in "${members[@]}"; do
		if [ -f "$dir/$n.pid" ]; then
			for _ in $(seq 200); do pidfile_alive "$dir/$n.pid" || break; sleep 0.1; done
			pidfile_alive "$dir/$n.pid" && kill_group "$(cat "$dir/$n.pid")"
			rm -f "$dir/$n.pid"
		fi
		# A postmaster left by a kill -9 of its Patroni.
		if [ -f "$dir/$n/data/postmaster.pid" ]; then
			kill_member "$dir" "$n"
		fi
	done
	if pidfile_alive "$dir/etcd.pid"; then
		kill "$(cat "$dir/etcd.pid")"
		rm -f "$dir/etcd.pid"
	fi
}

# kill_member kills a member's Patroni and its PostgreSQL (the postmaster
# and its backends) with SIGKILL at once: a crashed host, as the others see it.
kill_member() {
	local dir=$1 name=$2 pm=""
	[ -f "$dir/$name/data/postmaster.pid" ] && pm=$(head -1 "$dir/$name/data/postmaster.pid")
	[ -f "$dir/$name.pid" ] && kill -KILL -- "-$(cat "$dir/$name.pid")" 2>/dev/null || true
	[ -n "$pm" ] && kill -KILL -- "-$pm" "$pm" 2>/dev/null || true
	[ -f "$dir/$name.pid" ] && kill_group "$(cat "$dir/$name.pid")"
	[ -n "$pm" ] && kill_group "$pm"
	rm -f "$dir/$name.pid"
}

kill_leader() {
	local dir=$1 l
	l=$(leader "$dir")
	[ -n "$l" ] || die "no leader to kill"
	kill_member "$dir" "$l"
	echo "$l"
}

switchover() {
	local dir=$1 l
	l=$(leader "$dir")
	[ -n "$l" ] || die "no leader to switch over from"
	wait_sync "$dir"
	patronictl_ "$dir" switchover --leader "$l" --force "$scope" >&2
	wait_leader "$dir"
}

dsn() {
	local style=${2:-multi}
	case "$style" in
	multi) echo "host=127.0.0.1,127.0.0.1,127.0.0.1 port=$pg_port,$((pg_port + 1)),$((pg_port + 2)) user=postgres dbname=chime sslmode=disable target_session_attrs=read-write connect_timeout=3" ;;
	haproxy) echo "host=127.0.0.1 port=$proxy_port user=postgres dbname=chime sslmode=disable connect_timeout=3" ;;
	*) die "dsn style is multi or haproxy" ;;
	esac
}

cmd=${1:-}
case "$cmd" in
install) apt-get install -y etcd-server patroni haproxy ;;
up | down | status | leader | kill-leader | switchover | dsn | start | wait-healthy)
	[ -n "${2:-}" ] || die "usage: $0 $cmd DIR"
	dir=$(cd "$2" 2>/dev/null && pwd || (mkdir -p "$2" && cd "$2" && pwd))
	case "$cmd" in
	up) up "$dir" ;;
	down) down "$dir" ;;
	status) patronictl_ "$dir" list ;;
	leader) leader "$dir" ;;
	kill-leader) kill_leader "$dir" ;;
	start) [ -n "${3:-}" ] || die "usage: $0 start DIR MEMBER"; idx "$3" >/dev/null; start_member "$dir" "$3" ;;
	switchover) switchover "$dir" ;;
	wait-healthy) wait_sync "$dir" ;;
	dsn) dsn "$dir" "${3:-multi}" ;;
	esac
	;;
*) sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
