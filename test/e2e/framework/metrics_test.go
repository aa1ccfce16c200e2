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
