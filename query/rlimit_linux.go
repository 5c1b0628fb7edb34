//go:build linux

package query

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// memoryContained reports whether workers run under a memory limit on this system.
const memoryContained = true

// setDataLimit caps the worker's data segment (RLIMIT_DATA: since Linux 4.7 it counts every private writable
// mapping, which is where the Go heap and goroutine stacks live). Past it, the Go runtime cannot map memory and the
// worker dies with "out of memory", which the engine reports as ErrLimit. Only the soft limit is set, so the next
// query may raise it again. RLIMIT_AS is not usable: the Go runtime reserves address space far beyond its use.
func setDataLimit(bytes int64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &lim); err != nil {
		return
	}
	cur := uint64(bytes)
	if lim.Max != ^uint64(0) && cur > lim.Max {
		cur = lim.Max
	}
	lim.Cur = cur
	_ = syscall.Setrlimit(syscall.RLIMIT_DATA, &lim)
}

// dataSegment returns the process's current data segment size (VmData), in bytes.
func dataSegment() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmData:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// setWorkerAttrs makes a worker die with the server.
func setWorkerAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
