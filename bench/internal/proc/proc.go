// Package proc reads what Linux knows about the local control plane's
// processes: peak and current RSS, and CPU time (own and reaped children's),
// so the benchmarks can say what a phase cost, not only how long it took.
package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ: /proc reports CPU time in 1/100 s on Linux.
const clockTick = 10 * time.Millisecond

// Proc is a process started by hack/local/up.sh.
type Proc struct {
	Name string
	PID  int
}

// Find reads <localDir>/<name>.pid (the pid is its first line).
func Find(localDir, name string) (Proc, error) {
	b, err := os.ReadFile(filepath.Join(localDir, name+".pid"))
	if err != nil {
		return Proc{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return Proc{}, fmt.Errorf("%s.pid: %w", name, err)
	}
	return Proc{Name: name, PID: pid}, nil
}

// Memory returns VmHWM (peak RSS since start or the last ResetPeak) and VmRSS,
// in MiB.
func (p Proc) Memory() (peakMiB, rssMiB float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmHWM":
			peakMiB = kb / 1024
		case "VmRSS":
			rssMiB = kb / 1024
		}
	}
	return peakMiB, rssMiB, nil
}

// ResetPeak restarts VmHWM from the current RSS (clear_refs value 5), so a
// phase's peak is its own.
func (p Proc) ResetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.PID), []byte("5"), 0)
}

// CPU returns user+system time of the process itself plus that of its
// children already waited for (git http-backend runs as a child of
// git-http-server and is reaped before the HTTP answer completes).
func (p Proc) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return 0, err
	}
	// Fields after "(comm) ": state is field 3; utime..cstime are 14..17.
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(rest)
	if len(f) < 15 {
		return 0, fmt.Errorf("short /proc/%d/stat", p.PID)
	}
	var ticks int64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
