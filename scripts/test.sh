#!/usr/bin/env bash
# Runs chime's whole test suite against real databases: a fresh SQLite file per
# test, the local MariaDB and the local PostgreSQL (each started here when it
# is down; tests create a database of their own on each). Extra arguments
# go to `go test`, e.g. scripts/test.sh -run TestFire ./scheduleengine/
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${CHIME_TEST_MYSQL_DSN:-}" ]]; then
  if ! mariadb -uroot -e 'select 1' >/dev/null 2>&1; then
    echo "starting MariaDB" >&2
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
    for _ in $(seq 1 60); do
      mariadb -uroot -e 'select 1' >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  # A TCP user of our own (root may authenticate only through the socket),
  # with rights on the test databases only: chime_test and the chime_t_*
  # ones internal/testsupport/testdb and the tests create, which `chime\_t%` matches
  # (\_ is a literal underscore). GRANT OPTION and CREATE USER let store's
  # tests create a user without rights and run the GRANT chime suggests to
  # it; PROCESS lets clustertest read information_schema.innodb_trx. Earlier
  # versions of this script granted ALL ON *.*: the REVOKE takes that back.
  mariadb -uroot <<'SQL'
CREATE USER IF NOT EXISTS 'chime_test'@'127.0.0.1' IDENTIFIED BY 'chime_test';
CREATE USER IF NOT EXISTS 'chime_test'@'localhost' IDENTIFIED BY 'chime_test';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'chime_test'@'127.0.0.1', 'chime_test'@'localhost';
GRANT ALL PRIVILEGES ON `chime\_t%`.* TO 'chime_test'@'127.0.0.1', 'chime_test'@'localhost' WITH GRANT OPTION;
GRANT PROCESS, CREATE USER ON *.* TO 'chime_test'@'127.0.0.1', 'chime_test'@'localhost';
CREATE DATABASE IF NOT EXISTS chime_test;
SQL
  export CHIME_TEST_MYSQL_DSN='chime_test:chime_test@tcp(127.0.0.1:3306)/chime_test'
fi

if [[ -z "${CHIME_TEST_POSTGRES_DSN:-}" ]]; then
  pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; }
  if ! pg_up; then
    echo "starting PostgreSQL" >&2
    # Debian's clusters: start the newest installed version's "main".
    version=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)
    if [[ -n "$version" ]]; then
      pg_ctlcluster "$version" main start || echo "could not start PostgreSQL $version" >&2
    fi
    for _ in $(seq 1 60); do
      pg_up && break
      sleep 1
    done
  fi
  # chime_test is where tests connect to create (and drop) a database each;
  # the machine's server trusts local TCP connections of the postgres user.
  psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'chime_test'" | grep -q 1 ||
    psql -h 127.0.0.1 -U postgres -d postgres -qc 'CREATE DATABASE chime_test'
  export CHIME_TEST_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/chime_test?sslmode=disable'
fi

# The console's browser tests drive Debian's chromium headless (chromedp);
# they skip without it on a laptop but fail with CI=true, so install it.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium for the console's browser tests" >&2
  sudo=""
  [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium; } >/dev/null ||
    echo "could not install chromium: the console's browser tests will skip (and fail with CI=true)" >&2
fi

full=0
if [[ $# -eq 0 ]]; then
  set -- ./...
  full=1
fi
go vet ./...
# The linters (.golangci.yml) on the full run; the first run builds
# golangci-lint from internal/tools/go.mod.
if [[ $full -eq 1 ]]; then
  go tool -modfile=internal/tools/go.mod golangci-lint run --allow-serial-runners ./...
fi
# A test that fails is run once more, alone, and the suite passes only if
# it passes then; the first failure stays in the output, marked "FLAKY", so
# it is seen and fixed, not hidden. The real-process cluster tests (kill -9,
# SIGSTOP, a MariaDB stopped under three nodes) and a SIGSTOP check have
# each failed about once in five full runs on a loaded 2-core machine and
# never alone; their investigation is open. A package that fails without
# naming a test (a build failure, a panic, a timeout) is not retried.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! go test -race -count=1 -timeout 18m "$@" 2>&1 | tee "$log"; then
  retries=$(awk '
    /^--- FAIL: / { t = $3; if (tests == "") tests = t; else tests = tests "|" t; next }
    /^FAIL\t/ { if (tests == "" || $0 ~ /\[build failed\]|\[setup failed\]/) { print "NONE " $2 } else { print $2 " " tests }; tests = ""; next }
  ' "$log")
  if [[ -z "$retries" ]] || grep -q '^NONE ' <<<"$retries"; then
    echo "test.sh: a package failed without naming a failed test: not retried" >&2
    exit 1
  fi
  while read -r pkg tests; do
    echo "FLAKY? retrying once: $pkg -run '^($tests)\$'" >&2
    go test -race -count=1 -timeout 10m -run "^(${tests})\$" "$pkg"
  done <<<"$retries"
  echo "test.sh: every failed test passed when run again (see FLAKY above)" >&2
fi
# The whole suite also gives every fuzz target a short search beyond its seeds,
# and follows the README's quick start with a real binary and server.
if [[ $full -eq 1 ]]; then
  ./scripts/fuzz.sh
  ./scripts/walkthrough.sh
fi
