package daemon

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
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

// The process sets the GC default before running the daemon; $GOGC wins.
func TestRunProcessSetsTheGCDefault(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	t.Setenv(NodeNameEnv, "")
	_, ctx := ktesting.NewTestContext(t)

	t.Setenv("GOGC", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	// Invalid options: Run returns at once.
	require.ErrorContains(t, RunProcess(ctx, NewOptions()), "node name is empty")
	assert.Equal(t, DefaultGCPercent, debug.SetGCPercent(100))

	t.Setenv("GOGC", "100")
	require.ErrorContains(t, RunProcess(ctx, NewOptions()), "node name is empty")
	assert.Equal(t, 100, debug.SetGCPercent(100), "an operator's GOGC is left alone")
}
