//go:build bench

package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// findPodProcess returns the PID of the process named comm (as in /proc/<pid>/comm, at most 15
// characters) whose environment has POD_NAME=pod: the kubelet's downward API sets it in kruise's
// containers. The benchmarks run as root on the node, so they can read every process.
func findPodProcess(comm, pod string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	want := []byte("POD_NAME=" + pod)
	for _, d := range dirs {
		c, err := os.ReadFile(d + "/comm")
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		env, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				return strconv.Atoi(filepath.Base(d))
			}
		}
	}
	return 0, fmt.Errorf("no process %q of pod %s", comm, pod)
}

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	at  time.Time
	cpu time.Duration // user + system
	rss int64         // VmRSS, bytes
	hwm int64         // VmHWM (peak RSS), bytes
}

func sampleProcess(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("parsing /proc/%d/stat times", pid)
	}
	s.cpu = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("parsing %s of /proc/%d/status: %w", k, pid, err)
		}
		if k == "VmRSS" {
			s.rss = kb * 1024
		} else {
			s.hwm = kb * 1024
		}
	}
	return s, nil
}

// cpuPercent is the share of one core the process used between a and b.
func cpuPercent(a, b procSample) float64 {
	wall := b.at.Sub(a.at)
	if wall <= 0 {
		return 0
	}
	return 100 * float64(b.cpu-a.cpu) / float64(wall)
}

// mib formats bytes as MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
