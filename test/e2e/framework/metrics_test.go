package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSampleNames(t *testing.T) {
	exposition := `# HELP x_seconds A histogram.
# TYPE x_seconds histogram
x_seconds_bucket{le="0.5"} 1
x_seconds_bucket{le="+Inf"} 2
x_seconds_sum 3.5
x_seconds_count 2
# TYPE up gauge
up 1 1700000000000
label_with_space{a="b c"} 0

`
	want := map[string]bool{"x_seconds_bucket": true, "x_seconds_sum": true, "x_seconds_count": true, "up": true, "label_with_space": true}
	if diff := cmp.Diff(want, SampleNames(exposition)); diff != "" {
		t.Errorf("SampleNames (-want +got):\n%s", diff)
	}
}

func TestHasSeries(t *testing.T) {
	exposition := `# TYPE kruise_workload_replicas gauge
kruise_workload_replicas{kind="CloneSet",name="web",namespace="ns-1",state="desired"} 1
kruise_workload_replicas{kind="CloneSet",name="we\"b",namespace="ns-2",state="ready"} 1
kruise_workload_replicas_other{name="web"} 1
`
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"kruise_workload_replicas", map[string]string{"namespace": "ns-1", "name": "web"}, true},
		{"kruise_workload_replicas", map[string]string{"namespace": "ns-2", "name": `we"b`, "state": "ready"}, true},
		{"kruise_workload_replicas", map[string]string{"namespace": "ns-2", "state": "desired"}, false},
		{"kruise_workload_replicas", map[string]string{"namespace": "ns-3"}, false},
		{"kruise_workload_replicas_other", map[string]string{"name": "web"}, true},
		{"kruise_workload", map[string]string{"name": "web"}, false},
	} {
		if got := HasSeries(exposition, tc.name, tc.labels); got != tc.want {
			t.Errorf("HasSeries(%s, %v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
