package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestDecisionApplyAndPatch(t *testing.T) {
	tests := []struct {
		name           string
		d              Decision
		pod            *corev1.Pod
		wantPatch      string // "" for none
		wantLabels     map[string]string
		wantFinalizers []string
	}{
		{
			name: "wait changes nothing", d: Decision{Action: ActionWait, State: "PreparingDelete"},
			pod:        podIn("PreparingDelete"),
			wantLabels: map[string]string{pub.LifecycleStateKey: "PreparingDelete"},
		},
		{
			name: "update changes nothing here (the in-place update writes Updating)", d: Decision{Action: ActionUpdate, State: "Updating"},
			pod:        podIn("Normal"),
			wantLabels: map[string]string{pub.LifecycleStateKey: "Normal"},
		},
		{
			name: "set state", d: Decision{Action: ActionSetState, State: "Normal"},
			pod:        podIn("PreparingNormal", labels("app", "web")),
			wantPatch:  `{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"Normal"},"annotations":{"lifecycle.apps.kruise.io/timestamp":"` + stamp + `"}}}`,
			wantLabels: map[string]string{pub.LifecycleStateKey: "Normal", "app": "web"},
		},
		{
			name: "restore the hook: labels, and the whole finalizer list under the resourceVersion",
			d:    Decision{Action: ActionSetState, State: "PreparingUpdate", RestoreHook: inPlaceHook},
			pod:  podIn("Updated", gen.SetPodResourceVersion("42"), gen.AddPodFinalizers("other")),
			wantPatch: `{"metadata":{"resourceVersion":"42","labels":{"lifecycle.apps.kruise.io/state":"PreparingUpdate","ip":"true"},` +
				`"annotations":{"lifecycle.apps.kruise.io/timestamp":"` + stamp + `"},"finalizers":["other","example.com/ip"]}}`,
			wantLabels:     map[string]string{pub.LifecycleStateKey: "PreparingUpdate", "ip": "true"},
			wantFinalizers: []string{"other", "example.com/ip"},
		},
		{
			name: "restore a hook whose finalizers are there: no finalizer list, no precondition",
			d:    Decision{Action: ActionSetState, State: "PreparingUpdate", RestoreHook: inPlaceHook},
			pod:  podIn("Updated", gen.SetPodResourceVersion("42"), gen.AddPodFinalizers("example.com/ip")),
			wantPatch: `{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"PreparingUpdate","ip":"true"},` +
				`"annotations":{"lifecycle.apps.kruise.io/timestamp":"` + stamp + `"}}}`,
			wantLabels:     map[string]string{pub.LifecycleStateKey: "PreparingUpdate", "ip": "true"},
			wantFinalizers: []string{"example.com/ip"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := tc.d.Patch(tc.pod, clk)
			require.NoError(t, err)
			if tc.wantPatch == "" {
				assert.Nil(t, patch)
			} else {
				assert.JSONEq(t, tc.wantPatch, string(patch))
			}
			p := tc.pod.DeepCopy()
			tc.d.Apply(p, clk)
			assert.Equal(t, tc.wantLabels, p.Labels)
			assert.Equal(t, tc.wantFinalizers, p.Finalizers)
		})
	}
}
