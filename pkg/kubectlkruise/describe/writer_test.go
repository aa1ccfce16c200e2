package describe

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A page aligns its columns, indents by level and escapes terminal control
// characters that an object's fields may carry.
func TestPage(t *testing.T) {
	tests := []struct {
		name  string
		write func(p *page)
		want  string
	}{
		{
			name: "aligned and indented",
			write: func(p *page) {
				p.line(0, "Name:\t%s", "web")
				p.line(1, "Replicas:\t%d", 3)
			},
			want: "Name:        web\n  Replicas:  3\n",
		},
		{
			name:  "control characters escaped",
			write: func(p *page) { p.keyValues("Labels", map[string]string{"team": "\x1b[31mred\r"}) },
			want:  "Labels:  team=^[[31mred\\r\n",
		},
		{
			name:  "no labels",
			write: func(p *page) { p.keyValues("Labels", nil) },
			want:  "Labels:  <none>\n",
		},
		{
			name:  "age from the page's now",
			write: func(p *page) { p.line(0, "Age:\t%s", p.age(ago(90*time.Minute))) },
			want:  "Age:  90m\n",
		},
		{
			name:  "unknown age",
			write: func(p *page) { p.line(0, "Age:\t%s", p.age(metav1.Time{})) },
			want:  "Age:  <unknown>\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPage(now)
			tt.write(p)
			if got := p.String(); got != tt.want {
				t.Errorf("page =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
