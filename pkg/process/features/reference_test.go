package features

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"
)

// referenceGate is one line of testdata/openkruise-v1.9.0-gates.txt.
type referenceGate struct {
	name  string
	def   bool
	stage string // ALPHA, BETA, GA
}

func readReferenceGates(t *testing.T) []referenceGate {
	t.Helper()
	f, err := os.Open("testdata/openkruise-v1.9.0-gates.txt")
	require.NoError(t, err)
	defer f.Close()
	var out []referenceGate
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "line %q", line)
		out = append(out, referenceGate{name: fields[0], def: fields[1] == "true", stage: strings.ToUpper(fields[2])})
	}
	require.NoError(t, s.Err())
	require.NotEmpty(t, out)
	return out
}

// differentDefaults are the implemented gates whose default or stage is
// deliberately not OpenKruise's; the doc comment of each gate says why.
var differentDefaults = map[string]bool{
	"SidecarTerminator":              true, // on: the terminator is a reason to install kruise
	"ImagePullJobGate":               true, // on: image pre-pull is one of kruise's two daemon features
	"InPlaceWorkloadVerticalScaling": true, // on: kruise has resized in place from its first CloneSet; the end state is the same
}

// afterRelease are gates OpenKruise added after v1.9.0 (master, the module
// proxy's v1.9.0): accepted too, so values written for the next release work.
var afterRelease = map[string]bool{
	"DefaultHostNetworkHostPortsInPodTemplates": true,
	"DaemonSetPruneIneligibleNodes":             true,
}

// TestEveryOpenKruiseGateNameIsAccepted sets each gate of OpenKruise v1.9.0
// by the name an operator writes, so a --feature-gates value written for
// OpenKruise never makes kruise exit.
func TestEveryOpenKruiseGateNameIsAccepted(t *testing.T) {
	for _, g := range readReferenceGates(t) {
		for _, v := range []string{"true", "false"} {
			f := NewFlag(New())
			assert.NoError(t, f.Set(g.name+"="+v), "--feature-gates=%s=%s", g.name, v)
		}
	}
}

// TestGateNamesAreOpenKruises keeps both of kruise's lists to OpenKruise's
// names: an ignored gate under any other name would be a gate nobody can set.
func TestGateNamesAreOpenKruises(t *testing.T) {
	ref := map[string]referenceGate{}
	for _, g := range readReferenceGates(t) {
		ref[g.name] = g
	}
	for name := range unimplemented {
		_, ok := ref[name]
		assert.True(t, ok || afterRelease[name], "ignored gate %q is not one of OpenKruise's names", name)
	}
	for name, spec := range specs {
		g, ok := ref[string(name)]
		if !assert.True(t, ok, "gate %q is not one of OpenKruise's names", name) {
			continue
		}
		same := spec.Default == g.def && string(spec.PreRelease) == g.stage
		if differentDefaults[string(name)] {
			assert.False(t, same, "%s now matches OpenKruise: drop it from differentDefaults", name)
			continue
		}
		assert.True(t, same, "%s: kruise has default %t (%s), OpenKruise default %t (%s)", name, spec.Default, spec.PreRelease, g.def, g.stage)
	}
	// Every reference gate is in exactly one of the two lists.
	for name := range ref {
		_, impl := specs[featuregate.Feature(name)]
		_, ignored := unimplemented[name]
		assert.True(t, impl != ignored, "%s: implemented=%t ignored=%t", name, impl, ignored)
	}
}
