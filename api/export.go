package api

import (
	"time"

	"github.com/chimesched/chime/trigger"
)

// NextFires lists up to n fire times of trig after now, in UTC: the same
// walk the API's next_fires shows, for the web console's longer preview.
func NextFires(trig trigger.Trigger, now time.Time, n int) []time.Time {
	return nextFires(trig, now, n)
}
