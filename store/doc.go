// Package store is the only package of a node with SQL on chime's
// database (internal/bench seeds its tables with plain INSERTs, as an
// admin's SQL would; the conformance suite chimedb/chimedbtest and the
// tests read and write rows with SQL of their own, test support only). It opens MySQL (MariaDB), PostgreSQL or SQLite
// through GORM, applies the embedded migrations, and holds every query:
// fire, claim, complete, heartbeat, lease, recover, and the admin queries
// behind the API and the console. chimedb declares the interfaces the
// engines, cluster, api and console call (ScheduleStore, TaskStore,
// ClusterStore, AdminStore, ConsoleStore) and their parameter and row
// types; store implements them, and the differences between dialects live
// here and nowhere else. app opens a Store and hands it to each; the CLI
// reaches it through app (and internal/bench, for chime bench).
//
// store may import chimedb, models, sql and third-party database
// libraries; it never imports an engine, the API, the console or the CLI.
//
// Times written by store are UTC truncated to the microsecond (see DBTime):
// MySQL keeps DATETIME(6), and SQLite compares timestamps as text, which is
// only time order when every writer uses one format and one zone. Migration
// 00003 holds other writers to that: on MySQL, triggers convert what a
// session not at '+00:00' writes from its zone to UTC (chime's connections
// are at '+00:00', see mysqlDSN, and pass untouched); on SQLite, triggers
// rewrite other time text into the driver's form or refuse it.
package store
