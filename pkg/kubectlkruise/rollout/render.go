package rollout

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// maxListed bounds the pods named per list, so that the view fits a screen.
const maxListed = 5

// barWidth is the progress bar's width in characters.
const barWidth = 30

// isTerminal reports whether out is a terminal.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is out's width in columns, 0 if unknown.
func terminalWidth(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// pods is "1 pod" or "2 pods".
func pods(n int32) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// summary is the one-line state of a rollout, as printed when piped and by
// `status --watch=false`.
func (s snapshot) summary() string {
	c := s.counts
	switch {
	case s.done() && c.partition > 0:
		return fmt.Sprintf("%s %q partitioned rollout complete: %d of %d pods updated, the partition holds %s back",
			s.kind, s.name, c.updated, c.desired, pods(c.partition))
	case s.done():
		return fmt.Sprintf("%s %q successfully rolled out", s.kind, s.name)
	case !c.observed:
		return fmt.Sprintf("Waiting for %s %q spec update to be observed...", s.kind, s.name)
	}
	var b strings.Builder
	if s.paused {
		fmt.Fprintf(&b, "%s %q rollout is paused: ", s.kind, s.name)
	} else {
		fmt.Fprintf(&b, "Waiting for %s %q rollout to finish: ", s.kind, s.name)
	}
	fmt.Fprintf(&b, "%d of %d updated, %d ready, %d available", c.updated, c.target(), c.updatedReady, c.updatedAvailable)
	if c.total > c.desired {
		fmt.Fprintf(&b, ", %d old to remove", c.total-c.desired)
	}
	if c.partition > 0 {
		fmt.Fprintf(&b, "; partition holds %s of %d back", pods(c.partition), c.desired)
	}
	if len(s.hooks) > 0 {
		fmt.Fprintf(&b, "; waiting on hook: %s", s.hookList())
	}
	if len(s.inPlace) > 0 {
		fmt.Fprintf(&b, "; in place: %s", s.batchList())
	}
	if s.paused {
		fmt.Fprintf(&b, " (resume with: kubectl kruise rollout resume %s/%s)", kindArg(s.kind), s.name)
	}
	return b.String()
}

// kindArg is how a user types the kind on the command line.
func kindArg(display string) string {
	for _, k := range kinds {
		if k.display == display {
			return k.names[0]
		}
	}
	return display
}

func (s snapshot) hookList() string {
	items := make([]string, 0, len(s.hooks))
	for _, h := range s.hooks {
		items = append(items, fmt.Sprintf("%s (%s)", h.pod, h.state))
	}
	return listOf(items)
}

func (s snapshot) batchList() string {
	items := make([]string, 0, len(s.inPlace))
	for _, p := range s.inPlace {
		item := fmt.Sprintf("%s batch %d [%s]", p.pod, p.batch, strings.Join(p.containers, ","))
		if len(p.next) > 0 {
			item += fmt.Sprintf(" next [%s]", strings.Join(p.next, ","))
		}
		items = append(items, item)
	}
	return listOf(items)
}

// listOf joins items, naming at most maxListed.
func listOf(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(items)-maxListed)
}

// bar is the progress bar of updated-and-ready pods against the target.
func (s snapshot) bar() string {
	c := s.counts
	filled := barWidth
	if t := c.target(); t > 0 {
		filled = int(min(max(c.updatedReady, 0), t)) * barWidth / int(t)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled) + "]"
}

// screen is the terminal view of a rollout, one entry a line.
func (s snapshot) screen() []string {
	c := s.counts
	head := fmt.Sprintf("%s %s  revision %s", s.kind, s.name, c.updateRevision)
	if c.partition > 0 {
		head += fmt.Sprintf("  partition %d (holds %s back)", c.partition, pods(c.partition))
	}
	if s.paused {
		head += "  PAUSED"
	}
	lines := []string{
		head,
		fmt.Sprintf("%s %d/%d updated  %d ready  %d available", s.bar(), c.updated, c.target(), c.updatedReady, c.updatedAvailable),
	}
	if len(s.hooks) > 0 {
		lines = append(lines, "waiting on hook: "+s.hookList())
	}
	if len(s.inPlace) > 0 {
		lines = append(lines, "in place: "+s.batchList())
	}
	if s.done() || !c.observed || s.paused {
		lines = append(lines, s.summary())
	}
	return lines
}

// view shows a rollout's snapshots as they come.
type view interface {
	show(s snapshot)
}

// lineView prints the summary line whenever it changes (piped output).
type lineView struct {
	out  io.Writer
	last string
}

func (v *lineView) show(s snapshot) {
	line := s.summary()
	if line == v.last {
		return
	}
	v.last = line
	fmt.Fprintln(v.out, line)
}

// terminalView redraws the screen in place.
type terminalView struct {
	out io.Writer
	// drawn is how many lines the last screen took.
	drawn int
	last  string
	// width truncates lines so that none wraps (0: no limit), which would
	// throw the redraw's line count off.
	width int
}

func (v *terminalView) show(s snapshot) {
	lines := s.screen()
	if v.width > 1 {
		for i, line := range lines {
			if len(line) >= v.width {
				lines[i] = line[:v.width-1]
			}
		}
	}
	text := strings.Join(lines, "\n")
	if text == v.last {
		return
	}
	v.last = text
	if v.drawn > 0 {
		// Back to the start of the previous screen, and clear it.
		fmt.Fprintf(v.out, "\r\x1b[%dA\x1b[J", v.drawn)
	}
	fmt.Fprintln(v.out, text)
	v.drawn = len(lines)
}
