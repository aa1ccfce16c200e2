package describe

import (
	"bytes"
	"sort"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	kubedescribe "k8s.io/kubectl/pkg/describe"
)

// page builds a description the way kubectl describe lays one out:
// "Field:<tab>value" lines through kubectl's own PrefixWriter (two spaces
// per level, terminal control characters in object fields escaped),
// aligned by a tabwriter.
type page struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
	w   kubedescribe.PrefixWriter
	now time.Time
}

func newPage(now time.Time) *page {
	p := &page{now: now}
	p.tw = tabwriter.NewWriter(&p.buf, 0, 8, 2, ' ', 0)
	p.w = kubedescribe.NewPrefixWriter(p.tw)
	return p
}

// line writes one line at the indent level; tabs separate columns.
func (p *page) line(level int, format string, args ...any) {
	p.w.Write(level, format+"\n", args...)
}

// String flushes the page and returns it.
func (p *page) String() string {
	_ = p.tw.Flush()
	return p.buf.String()
}

// meta writes the object's Name, Namespace, Labels, Annotations and age.
func (p *page) meta(m metav1.ObjectMeta) {
	p.line(0, "Name:\t%s", m.Name)
	if m.Namespace != "" {
		p.line(0, "Namespace:\t%s", m.Namespace)
	}
	p.keyValues("Labels", m.Labels)
	p.keyValues("Annotations", m.Annotations)
	p.line(0, "CreationTimestamp:\t%s", timestamp(m.CreationTimestamp))
}

// keyValues writes a map as kubectl does: one key=value a line, sorted.
func (p *page) keyValues(title string, m map[string]string) {
	if len(m) == 0 {
		p.line(0, "%s:\t<none>", title)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		label := title + ":"
		if i > 0 {
			label = ""
		}
		p.line(0, "%s\t%s=%s", label, k, m[k])
	}
}

// age is the time from t to the page's now, as kubectl prints ages.
func (p *page) age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(p.now.Sub(t.Time))
}

func timestamp(t metav1.Time) string {
	if t.IsZero() {
		return "<unset>"
	}
	return t.UTC().Format(time.RFC1123Z)
}

// orNone is s, or <none> when empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
