package rollout

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The terminal view cuts lines to the width, so that none wraps and the
// redraw moves up over exactly the lines it drew.
func TestTerminalViewFitsWidth(t *testing.T) {
	s := snapshot{kind: "CloneSet", name: "web", counts: rolloutCounts{observed: true, desired: 10, total: 10, updated: 2, updatedReady: 1, updateRevision: "web-v2"}}
	for i := range 8 {
		s.inPlace = append(s.inPlace, podBatch{pod: fmt.Sprintf("web-%d", i), batch: 1, containers: []string{"main"}, next: []string{"sidecar"}})
	}
	var out bytes.Buffer
	v := &terminalView{out: &out, width: 40}
	v.show(s)
	s.counts.updated = 3
	v.show(s)
	v.show(s) // unchanged: nothing drawn
	screens := strings.Split(out.String(), "\x1b[3A\x1b[J")
	if len(screens) != 2 {
		t.Fatalf("want two screens, the second moving up over the first's 3 lines:\n%q", out.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(line) >= 40+len("\r\x1b[3A\x1b[J") {
			t.Errorf("line %q is wider than the terminal", line)
		}
	}
	if !strings.Contains(screens[0], "in place: web-0 batch 1 [main] next") {
		t.Errorf("first screen:\n%s", screens[0])
	}
}

func TestListOfNamesAtMostFive(t *testing.T) {
	got := listOf([]string{"a", "b", "c", "d", "e", "f", "g"})
	if got != "a, b, c, d, e and 2 more" {
		t.Errorf("listOf: %q", got)
	}
}
