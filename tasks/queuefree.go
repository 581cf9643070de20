package tasks

// QueueFree is implemented by tasks whose OnQueue does nothing. The engine
// then never calls their OnQueue, and may claim their jobs straight into
// running (status, started_at and the attempt written by the claim itself):
// one UPDATE less per job, and no wait for it between the claim and Execute.
//
// It is an explicit opt-in, never inherited from Base: a task that embeds
// Base and overrides OnQueue must not claim it, or its OnQueue would be
// skipped. Declare it next to the task's other methods:
//
//	func (*Report) QueueFree() {}
type QueueFree interface{ QueueFree() }

// IsQueueFree reports whether t declares that its OnQueue does nothing.
func IsQueueFree(t Task) bool {
	_, ok := t.(QueueFree)
	return ok
}
