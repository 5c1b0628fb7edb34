//go:build !unix

package query

import "time"

// cpuTime is not measured here (benchmarks then report 0 cpu-ms/op).
func cpuTime() time.Duration { return 0 }
