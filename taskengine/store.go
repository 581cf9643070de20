package taskengine

import "github.com/chimesched/chime/chimedb"

// jobStore is every query the engine makes; *store.Store implements it, and
// dialect differences stay behind it.
type jobStore = chimedb.TaskStore
