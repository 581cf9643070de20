package taskengine

import (
	"math/rand/v2"
	"time"
)

// retryBackoff is the delay before attempt+1 after attempt failed:
// base·2^(attempt-1), jittered by ±20% so jobs that failed together do not
// retry together, and capped at maxDelay.
func retryBackoff(base time.Duration, attempt int, maxDelay time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(d, maxDelay)
}

// jitter spreads d by ±10%, so nodes started together do not poll together.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}
