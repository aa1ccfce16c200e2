package dashboard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []Selector
		wantErr    string
	}{
		{
			name: "bare metric",
			expr: "go_goroutines",
			want: []Selector{{Metric: "go_goroutines"}},
		},
		{
			name: "matchers of every kind and quote",
			expr: `up{a="x", b!="y\"z", c=~'p|q', d!~` + "`r.*`" + `}`,
			want: []Selector{{Metric: "up", Matchers: []Matcher{
				{Label: "a", Op: "=", Value: "x"}, {Label: "b", Op: "!=", Value: `y"z`},
				{Label: "c", Op: "=~", Value: "p|q"}, {Label: "d", Op: "!~", Value: "r.*"},
			}}},
		},
		{
			name: "aggregation with by before and label list not taken for metrics",
			expr: `histogram_quantile(0.99, sum by (le, webhook) (rate(x_bucket{component="c"}[5m])))`,
			want: []Selector{{Metric: "x_bucket", Matchers: []Matcher{{Label: "component", Op: "=", Value: "c"}}}},
		},
		{
			name: "aggregation with by after",
			expr: `sum(rate(a_total[1m])) by (node) / ignoring(result) group_left(reason) b`,
			want: []Selector{{Metric: "a_total"}, {Metric: "b"}},
		},
		{
			name: "keywords, numbers, durations, offset and a string argument",
			expr: `count(a == 0) or vector(1e-3) and on() b offset 1h30m unless c > bool 0x1F + Inf`,
			want: []Selector{{Metric: "a"}, {Metric: "b"}, {Metric: "c"}},
		},
		{
			name: "label_replace strings are not metrics",
			expr: `label_replace(a, "node", "$1", "exported_node", "(.+)")`,
			want: []Selector{{Metric: "a"}},
		},
		{
			name: "subquery and @ modifier",
			expr: `max_over_time(rate(a[1m])[10m:30s]) @ end()`,
			want: []Selector{{Metric: "a"}},
		},
		{
			name: "aggregation name used as a metric name",
			expr: `sum + 1`,
			want: []Selector{{Metric: "sum"}},
		},
		{name: "nameless selector", expr: `{job="x"}`, wantErr: "without a metric name"},
		{name: "__name__ matcher", expr: `x{__name__="y"}`, wantErr: "__name__"},
		{name: "unknown function", expr: `histogram_quantil(0.9, x)`, wantErr: `unknown function "histogram_quantil"`},
		{
			name: "a variable in a string is a value",
			expr: `x{node=~"$node"}`,
			want: []Selector{{Metric: "x", Matchers: []Matcher{{Label: "node", Op: "=~", Value: "$node"}}}},
		},
		{name: "unexpanded variable in a range", expr: `rate(x[$__rate_interval])`, wantErr: "unexpanded"},
		{name: "unexpanded variable", expr: `topk($n, x)`, wantErr: "unexpanded"},
		{name: "unterminated string", expr: `x{a="b}`, wantErr: "unterminated string"},
		{name: "recording rule", expr: `job:x:rate5m`, wantErr: "recording rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Selectors(tc.expr)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Selectors(%q) error = %v, want one containing %q", tc.expr, err, tc.wantErr)
			case tc.wantErr != "":
				return
			case err != nil:
				t.Fatalf("Selectors(%q): %v", tc.expr, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Selectors(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestSelectorComponents(t *testing.T) {
	for _, tc := range []struct {
		m    Matcher
		want []string
	}{
		{Matcher{"component", "=", "kruise-daemon"}, []string{"kruise-daemon"}},
		{Matcher{"component", "=~", "kruise-controller|kruise-daemon"}, []string{"kruise-controller", "kruise-daemon"}},
		{Matcher{"component", "=~", "kruise-.*"}, nil},
		{Matcher{"component", "!=", "kruise-daemon"}, nil},
		{Matcher{"node", "=", "kruise-daemon"}, nil},
	} {
		got := Selector{Metric: "x", Matchers: []Matcher{tc.m}}.Components()
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Components of %+v (-want +got):\n%s", tc.m, diff)
		}
	}
}

func TestExpand(t *testing.T) {
	vals := map[string]string{"node": ".*", "__rate_interval": "1m"}
	got, err := Expand(`rate(x{node=~"$node", a="${node:regex}", b="[[node]]"}[$__rate_interval]) + label_replace(y, "a", "$1", "b", "(.*)")`, vals)
	if err != nil {
		t.Fatal(err)
	}
	want := `rate(x{node=~".*", a=".*", b=".*"}[1m]) + label_replace(y, "a", "$1", "b", "(.*)")`
	if got != want {
		t.Errorf("Expand = %s\nwant     %s", got, want)
	}
	if _, err := Expand(`x{node=~"$nod"}`, vals); err == nil || !strings.Contains(err.Error(), "nod") {
		t.Errorf("Expand of an undefined variable: error = %v, want one naming it", err)
	}
}

func TestLabelValues(t *testing.T) {
	sel, label, ok := LabelValues(`label_values(kruise_workload_replicas{component="kruise-controller", kind=~"$kind"}, namespace)`)
	if !ok || sel != `kruise_workload_replicas{component="kruise-controller", kind=~"$kind"}` || label != "namespace" {
		t.Errorf("LabelValues = %q, %q, %v", sel, label, ok)
	}
	if _, _, ok := LabelValues(`query_result(up)`); ok {
		t.Error("LabelValues accepted query_result(...)")
	}
}
