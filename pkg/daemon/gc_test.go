package daemon

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestApplyGCDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []int
	}{
		{name: "GOGC unset: the default", env: map[string]string{"GOMEMLIMIT": "64MiB"}, want: []int{DefaultGCPercent}},
		{name: "GOGC set: left alone", env: map[string]string{"GOGC": "100"}},
		{name: "GOGC=off: left alone", env: map[string]string{"GOGC": "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []int
			applied := applyGCDefaults(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok },
				func(p int) int { set = append(set, p); return 100 })
			assert.Equal(t, tc.want, set)
			assert.Equal(t, len(tc.want) > 0, applied)
		})
	}
}
