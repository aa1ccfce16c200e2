package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// LogFollower records the log of one container as it is written, from its start until the
// container exits (the stream ends) or the test ends; it survives the pod's deletion, whose logs
// are gone once the pod is.
type LogFollower struct {
	mu    sync.Mutex
	lines []string
	err   error
	done  chan struct{}
}

// FollowPodLogs starts following the log of container in pod.
func (f *Framework) FollowPodLogs(ctx context.Context, t testing.TB, namespace, pod, container string) *LogFollower {
	t.Helper()
	lf := &LogFollower{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := f.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
	if err != nil {
		cancel()
		t.Fatalf("following the log of %s/%s[%s]: %v", namespace, pod, container, err)
	}
	go func() {
		defer close(lf.done)
		defer func() { _ = stream.Close() }()
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lf.mu.Lock()
			lf.lines = append(lf.lines, sc.Text())
			lf.mu.Unlock()
		}
		lf.mu.Lock()
		lf.err = sc.Err()
		lf.mu.Unlock()
	}()
	t.Cleanup(func() {
		cancel()
		<-lf.done
	})
	return lf
}

// Lines returns the lines recorded so far.
func (lf *LogFollower) Lines() []string {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return append([]string(nil), lf.lines...)
}

// Ended reports whether the stream has ended (the container exited), and how.
func (lf *LogFollower) Ended() (bool, error) {
	select {
	case <-lf.done:
		lf.mu.Lock()
		defer lf.mu.Unlock()
		return true, lf.err
	default:
		return false, nil
	}
}

// LogEntry is one line of a kruise component's log: when it was logged (by the process's own
// clock, at microsecond resolution), its message and its key/values as written.
type LogEntry struct {
	At   time.Time
	Msg  string
	Line string
}

// klogText matches the header and message of a klog text line:
// I1124 22:34:12.356293       1 leader.go:149] "Message" key="value" ...
var klogText = regexp.MustCompile(`^[IWEF](\d{2})(\d{2}) (\d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ [^]]+\] "((?:[^"\\]|\\.)*)"`)

// ParseLogEntry reads a line of --logging-format=text or json; ok is false for other lines.
// A text line carries no year (the one in which it is closest to now is taken) and no zone:
// kruise's images have no zone data, so their local time is UTC.
func ParseLogEntry(line string) (LogEntry, bool) {
	if strings.HasPrefix(line, "{") {
		var j struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &j); err != nil || j.TS == 0 {
			return LogEntry{}, false
		}
		sec, frac := math.Modf(j.TS / 1000)
		return LogEntry{At: time.Unix(int64(sec), int64(frac*1e9)), Msg: j.Msg, Line: line}, true
	}
	m := klogText.FindStringSubmatch(line)
	if m == nil {
		return LogEntry{}, false
	}
	now := time.Now()
	var best time.Time
	for _, y := range []int{now.Year() - 1, now.Year(), now.Year() + 1} {
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s%s %s", y, m[1], m[2], m[3]), time.UTC)
		if err != nil {
			return LogEntry{}, false
		}
		if best.IsZero() || at.Sub(now).Abs() < best.Sub(now).Abs() {
			best = at
		}
	}
	msg := strings.ReplaceAll(m[4], `\"`, `"`)
	return LogEntry{At: best, Msg: msg, Line: line}, true
}

// LogEntries parses the lines that are log entries.
func LogEntries(lines []string) []LogEntry {
	var out []LogEntry
	for _, l := range lines {
		if e, ok := ParseLogEntry(l); ok {
			out = append(out, e)
		}
	}
	return out
}

// LogValue returns the value of key in a log line ("" if absent): key="v" or key=v in text,
// "key":"v" in JSON.
func LogValue(line, key string) string {
	for _, p := range []*regexp.Regexp{
		regexp.MustCompile(`(?:^|\s)` + regexp.QuoteMeta(key) + `="((?:[^"\\]|\\.)*)"`),
		regexp.MustCompile(`(?:^|\s)` + regexp.QuoteMeta(key) + `=([^\s"]+)`),
		regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `":"((?:[^"\\]|\\.)*)"`),
	} {
		if m := p.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// PreviousPodLogs returns the logs of the previous instance of one container of a pod.
func (f *Framework) PreviousPodLogs(ctx context.Context, namespace, pod, container string) (string, error) {
	raw, err := f.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("previous logs of %s/%s[%s]: %w", namespace, pod, container, err)
	}
	return string(raw), nil
}

// PodLogs returns the logs of one container of a pod (through the API server and the kubelet).
func (f *Framework) PodLogs(ctx context.Context, namespace, pod, container string) (string, error) {
	raw, err := f.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s[%s]: %w", namespace, pod, container, err)
	}
	return string(raw), nil
}
