//go:build !unix

package bench

import "time"

// processCPU is 0: this system's CPU time is not read here.
func processCPU() time.Duration { return 0 }
