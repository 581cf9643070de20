package taskengine

import (
	"sync"

	"github.com/chimesched/chime/tasks"
)

// kindCache lists the registered task types whose OnQueue does nothing
// (tasks.QueueFree): a claim moves their jobs straight to running, and a
// fire may hand them off. Each kind is asked once (a registered kind's
// factory never changes); kinds registered later join at the next look.
type kindCache struct {
	reg       *tasks.Registry
	mu        sync.Mutex
	queueFree map[string]bool // task kind → tasks.IsQueueFree
	seen      int             // registered kinds when free was built
	free      []string
}

func (k *kindCache) startKinds() []string {
	kinds := k.reg.Kinds()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(kinds) == k.seen && k.queueFree != nil {
		return k.free
	}
	if k.queueFree == nil {
		k.queueFree = map[string]bool{}
	}
	var free []string
	for _, kind := range kinds {
		qf, ok := k.queueFree[kind]
		if !ok {
			t, err := k.reg.New(kind)
			qf = err == nil && tasks.IsQueueFree(t)
			k.queueFree[kind] = qf
		}
		if qf {
			free = append(free, kind)
		}
	}
	k.seen, k.free = len(kinds), free
	return free
}
