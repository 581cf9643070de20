// Package chimedb is what the engines, the cluster node, the API, the web
// console and the Quartz importer need from a database, and nothing of how
// it is done: the interfaces they call (ScheduleStore, TaskStore,
// LeaseStore, ClusterStore, AdminStore, ConsoleStore), the parameter and
// row types of those calls, the sentinel errors (ErrNotFound, ErrConflict,
// ...), the names of the leases and nodes' states, and the column caps and
// time form the rows obey.
//
// It imports only models, and no ORM, SQL driver or migration tool, so
// that scheduleengine, taskengine, cluster, api, console and quartzimport
// build without them (TestSeamHasNoDrivers checks it). store implements
// the interfaces over gorm on MySQL/MariaDB, PostgreSQL and SQLite, and
// passes chimedb/chimedbtest, the conformance suite every dialect runs;
// app hands a *store.Store to each (to the schedule engine, on a node that
// runs a task engine too, wrapped in taskengine.HandoffStore).
package chimedb
