package scheduleengine

import (
	"github.com/chimesched/chime/chimedb"
)

// Store is the database as the schedule engine needs it; *store.Store
// implements it, and tests wrap it. Its parameter and row types are
// chimedb's, which imports no driver.
type Store = chimedb.ScheduleStore
