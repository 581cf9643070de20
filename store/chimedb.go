package store

import "github.com/chimesched/chime/chimedb"

// Store implements every interface chimedb declares; their parameter and
// row types, sentinels and constants are used under chimedb's names.
var (
	_ chimedb.ScheduleStore = (*Store)(nil)
	_ chimedb.TaskStore     = (*Store)(nil)
	_ chimedb.ClusterStore  = (*Store)(nil)
	_ chimedb.AdminStore    = (*Store)(nil)
	_ chimedb.ConsoleStore  = (*Store)(nil)
	_ chimedb.AdminQueries  = (*Admin)(nil)
)
