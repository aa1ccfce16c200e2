package sidecarset

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestSyncRecordsOnEachPodWhetherItCanBeUpgraded(t *testing.T) {
	v1 := sidecarSetAt("1")
	changed := gen.SidecarSetFrom(sidecarSetAt("2"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LEVEL", Value: "debug"}}
	})
	f := newFixture(t, changed, injectedPod(t, "p-0", v1), injectedPod(t, "p-1", v1))
	require.NoError(t, f.sync())
	assert.ElementsMatch(t, []string{"p-0", "p-1"}, f.statusPatchedPods())
	for _, name := range []string{"p-0", "p-1"} {
		c, ok := podConditionOf(f.pod(name), UpgradableCondition)
		require.True(t, ok, name)
		assert.Equal(t, "False UpdateImmutableField {\"log\":false}", string(c.Status)+" "+c.Reason+" "+c.Message, name)
		assert.True(t, c.LastTransitionTime.Time.Equal(t0), name)
	}

	// The SidecarSet goes back to an image-only change: the pod upgraded and the one that now
	// could be are both recorded upgradable again.
	f = newFixture(t, sidecarSetAt("2"), f.pod("p-0"), f.pod("p-1"))
	require.NoError(t, f.sync())
	assert.Equal(t, []string{"p-0"}, f.patchedPods(), "maxUnavailable 1")
	assert.ElementsMatch(t, []string{"p-0", "p-1"}, f.statusPatchedPods())
	for _, name := range []string{"p-0", "p-1"} {
		c, _ := podConditionOf(f.pod(name), UpgradableCondition)
		assert.Equal(t, corev1.ConditionTrue, c.Status, name)
		assert.Equal(t, ReasonAllUpgradable, c.Reason, name)
		assert.Equal(t, `{"log":true}`, c.Message, name)
	}
}

func TestUpgradablePatch(t *testing.T) {
	cond := func(status corev1.ConditionStatus, msg string) gen.PodModifier {
		reason := ReasonAllUpgradable
		if status == corev1.ConditionFalse {
			reason = ReasonNotUpgradable
		}
		return gen.SetPodCondition(corev1.PodCondition{Type: UpgradableCondition, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: metav1.NewTime(t0.Add(-3600e9))})
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		ok      bool
		want    string // the condition's status, reason and message; "" for no patch
		newTime bool
	}{
		{name: "first verdict", pod: gen.Pod("p"), ok: true, want: `True AllSidecarsetUpgradable {"log":true}`, newTime: true},
		{name: "unchanged", pod: gen.Pod("p", cond(corev1.ConditionTrue, `{"log":true}`)), ok: true},
		{name: "another SidecarSet cannot: stays False", pod: gen.Pod("p", cond(corev1.ConditionFalse, `{"other":false}`)), ok: true,
			want: `False UpdateImmutableField {"log":true,"other":false}`},
		{name: "this one cannot any more", pod: gen.Pod("p", cond(corev1.ConditionTrue, `{"log":true,"other":true}`)), ok: false,
			want: `False UpdateImmutableField {"log":false,"other":true}`, newTime: true},
		{name: "a message that does not parse is started afresh", pod: gen.Pod("p", cond(corev1.ConditionFalse, `not json`)), ok: true,
			want: `True AllSidecarsetUpgradable {"log":true}`, newTime: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := upgradablePatch(tc.pod, "log", tc.ok, t0)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Nil(t, data)
				return
			}
			var patch struct {
				Status struct{ Conditions []corev1.PodCondition } `json:"status"`
			}
			require.NoError(t, json.Unmarshal(data, &patch))
			require.Len(t, patch.Status.Conditions, 1)
			c := patch.Status.Conditions[0]
			assert.Equal(t, tc.want, string(c.Status)+" "+c.Reason+" "+c.Message)
			assert.Equal(t, tc.newTime, c.LastTransitionTime.Time.Equal(t0), "transition time moves only with the status")
		})
	}
}
