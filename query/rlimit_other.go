//go:build !linux

package query

import "os/exec"

// memoryContained reports whether workers run under a memory limit on this system. Elsewhere than Linux a worker
// is still a separate process killed at its deadline, so a crash or a runaway loop cannot reach the server, but its
// memory is not capped.
const memoryContained = false

func setDataLimit(int64) {}

func dataSegment() int64 { return 0 }

func setWorkerAttrs(*exec.Cmd) {}
