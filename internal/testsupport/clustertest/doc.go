// Package clustertest holds process-level cluster tests: they build the
// chime binary, run several `chime serve` processes on one MariaDB (and, for
// TestKillLeader, also one PostgreSQL) database,
// kill the leader with SIGKILL, freeze it with SIGSTOP (TestFreezeLeader, in
// the fire-ahead window, which takes the idle-transaction bound: about 40 s
// a database) or take the database away, cut a node off from it through a
// fault proxy (TestPartitions, TestChaosSoak: internal/testsupport/faultproxy,
// see docs/failover.md), and check from
// the tables that nothing was fired twice, lost, or left stuck.
//
// The tests need a MariaDB/MySQL server (CHIME_TEST_MYSQL_DSN) and a
// PostgreSQL server (CHIME_TEST_POSTGRES_DSN); without one
// they skip, except under CI=true where that is a failure. The outage test
// also needs mariadbd and mariadb-install-db on PATH (or in /usr/sbin) to run
// a private server it can stop and restart. CHIME_CLUSTERTEST_HEARTBEAT,
// _FAILOVER and _SCHEDULES replace the harness's 500ms, 2s and 100;
// _PARTITION (8s) and _SOAK (60s) the length of a partition and of the soak. The package has no non-test
// code; it imports store, models and internal/testsupport/testdb.
package clustertest
