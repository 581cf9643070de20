// Package chimedb is what the engines, the cluster node and the API need
// from a database, and nothing of how it is done: the interfaces they call
// (ScheduleStore, TaskStore, LeaseStore, ClusterStore, AdminStore), the
// parameter and row types of those calls, the sentinel errors (ErrNotFound,
// ErrConflict, ...) and the column caps and time form the rows obey.
//
// It imports no ORM, SQL driver or migration tool, so that scheduleengine,
// taskengine, cluster and api build without them (TestSeamHasNoDrivers
// checks it). store implements the interfaces over gorm, MySQL/MariaDB and
// SQLite, and keeps aliases of these types under their old names.
package chimedb
