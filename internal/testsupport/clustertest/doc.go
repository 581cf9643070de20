// Package clustertest holds process-level cluster tests: they build the
// chime binary, run several `chime serve` processes on one MariaDB (and, for
// TestKillLeader, also one PostgreSQL) database,
// kill the leader with SIGKILL, freeze it with SIGSTOP (TestFreezeLeader, in
// the fire-ahead window, which takes the idle-transaction bound: about 40 s
// a database) or take the database away, cut a node off from it through a
// fault proxy (TestPartitions, TestChaosSoak: internal/testsupport/faultproxy,
// see docs/failover.md), and check from
// the tables that nothing was fired twice, lost, or left stuck.
// TestRollingUpgrade upgrades a cluster of the last release in
// releases.tsv (built from its commit with git archive and go build) to
// the working tree's binary, node by node, under load;
// TestRestoreDumpUnderLoad restores a mariadb-dump or pg_dump taken under
// load into a fresh database and starts a node on it. TestLimitsRace
// samples, every 10 ms, the active jobs of a queue and a definition with
// max_running while four nodes claim them, and kills one holding slots
// (docs/limits.md); _RACE_JOBS (1000) sets how many jobs arrive, and
// _RACE_UNLIMITED=1 leaves the limits unset, to see the check fail.
// TestWorkflowKill runs a 50-step workflow (fan-outs, joins, a chain) on
// three nodes while one is killed twice, and audits one job per step
// (docs/workflows.md); _WORKFLOW_RUNS (1) runs more at once, and
// _WORKFLOW_SLEEP (600ms) sets each step's sleep. TestDrainAndBroadcast
// runs broadcasts on three tagged nodes, drains one with `chime node
// drain` while it runs a long job (_DRAIN_SLEEP, 3s) and undrains it, and
// kills one while it runs a broadcast's shard, which another node takes
// over (docs/limits.md).
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
