package podbudget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func budget(mods ...gen.PUBModifier) *policyv1alpha1.PodUnavailableBudget {
	base := []gen.PUBModifier{gen.SetPUBNamespace(ns), gen.SetPUBSelector(map[string]string{"app": "web"}), gen.SetPUBGeneration(3), gen.SetPUBMaxUnavailable("1")}
	return gen.PUB("web-pub", append(base, mods...)...)
}

func pods(n int, mods ...gen.PodModifier) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = readyPod(string(rune('a'+i)), mods...)
	}
	return out
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func TestComputeStatusNumbers(t *testing.T) {
	surge := readyPod("surge", gen.AddPodLabels(map[string]string{appsv1beta1.SpecifiedDeleteKey: "true"}))
	for name, tc := range map[string]struct {
		b                                 *policyv1alpha1.PodUnavailableBudget
		pods                              []*corev1.Pod
		total                             int32
		allowed, current, desired, totalW int32
	}{
		"all available":                  {b: budget(), pods: pods(5), total: 5, allowed: 1, current: 5, desired: 4, totalW: 5},
		"one not ready":                  {b: budget(), pods: append(pods(4), readyPod("z", notReady)), total: 5, allowed: 0, current: 4, desired: 4, totalW: 5},
		"not ready, protected":           {b: budget(gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubProtectUnreadyPodsAnnotation: "true"})), pods: append(pods(4), readyPod("z", notReady)), total: 5, allowed: 1, current: 5, desired: 4, totalW: 5},
		"surge pod is not counted #2175": {b: budget(), pods: append(pods(5), surge), total: 5, allowed: 1, current: 5, desired: 4, totalW: 5},
		"percent rounds up":              {b: budget(gen.SetPUBMaxUnavailable("30%")), pods: pods(5), total: 5, allowed: 2, current: 5, desired: 3, totalW: 5},
		"minAvailable":                   {b: budget(func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = nil }, gen.SetPUBMinAvailable("2")), pods: pods(5), total: 5, allowed: 3, current: 5, desired: 2, totalW: 5},
		"scaled from zero":               {b: budget(gen.SetPUBMinAvailable("2"), func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = nil }), pods: pods(2), total: 0, allowed: 2, current: 2, desired: 0, totalW: 0},
		"no pods yet (#1857)":            {b: budget(), total: 3, allowed: 0, current: 0, desired: 2, totalW: 3},
		"recorded pods are not counted": {b: budget(gen.SetPUBStatus(policyv1alpha1.PodUnavailableBudgetStatus{DisruptedPods: map[string]metav1.Time{"a": at(-time.Second)}, UnavailablePods: map[string]metav1.Time{"b": at(-time.Second)}})),
			pods: pods(5), total: 5, allowed: 0, current: 3, desired: 4, totalW: 5},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := ComputeStatus(tc.b, Observation{Pods: tc.pods, Total: tc.total, Now: t0})
			require.NoError(t, err)
			st := res.Status
			assert.Equal(t, []int32{tc.allowed, tc.current, tc.desired, tc.totalW}, []int32{st.UnavailableAllowed, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas})
			assert.Equal(t, int64(3), st.ObservedGeneration)
			assert.Nil(t, st.Workloads)
		})
	}
}

func TestComputeStatusPrunes(t *testing.T) {
	recreated := readyPod("recreated", func(p *corev1.Pod) { p.CreationTimestamp = at(-time.Second) })
	going := readyPod("going", gen.SetPodDeletionTimestamp(t0))
	updating := readyPod("updating", notReady)
	b := budget(gen.SetPUBStatus(policyv1alpha1.PodUnavailableBudgetStatus{
		DisruptedPods: map[string]metav1.Time{
			"gone":      at(-time.Second),
			"going":     at(-time.Second),
			"recreated": at(-5 * time.Second),
			"stale":     at(-DeletionTimeout),
			"fresh":     at(-15 * time.Second),
		},
		UnavailablePods: map[string]metav1.Time{
			"gone":     at(-time.Second),
			"young":    at(-8 * time.Second),
			"back":     at(-UpdateGrace - time.Second),
			"updating": at(-time.Minute),
		},
	}))
	ps := []*corev1.Pod{recreated, going, updating, readyPod("stale"), readyPod("fresh"), readyPod("young"), readyPod("back")}
	res, err := ComputeStatus(b, Observation{Pods: ps, Total: 7, Now: t0})
	require.NoError(t, err)
	assert.Equal(t, map[string]metav1.Time{"fresh": at(-15 * time.Second)}, res.Status.DisruptedPods)
	assert.Equal(t, map[string]metav1.Time{"young": at(-8 * time.Second), "updating": at(-time.Minute)}, res.Status.UnavailablePods)
	assert.Equal(t, []string{"stale"}, res.NotDeleted)
	// young's grace ends in 2 s, fresh's timeout in 5 s.
	assert.Equal(t, 2*time.Second, res.RecheckAfter)
	// Available and not recorded: recreated, stale, back.
	assert.Equal(t, int32(3), res.Status.CurrentAvailable)

	res, err = ComputeStatus(budget(), Observation{Pods: ps, Total: 7, Now: t0})
	require.NoError(t, err)
	assert.Zero(t, res.RecheckAfter, "nothing recorded, nothing to recheck")
	assert.Nil(t, res.Status.DisruptedPods)
}

func TestComputeStatusPerWorkload(t *testing.T) {
	web := Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	api := Workload{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "api"}
	idle := Workload{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "idle"}
	bare := Workload{APIVersion: "v1", Kind: "Pod", Name: "solo"}
	ps := []*corev1.Pod{readyPod("w1"), readyPod("w2"), readyPod("w3"), readyPod("a1"), readyPod("a2", notReady), readyPod("solo")}
	of := map[string]Workload{"w1": web, "w2": web, "w3": web, "a1": api, "a2": api, "solo": bare}
	b := budget(gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubBudgetPerWorkloadAnnotation: "true"}),
		gen.SetPUBStatus(policyv1alpha1.PodUnavailableBudgetStatus{DisruptedPods: map[string]metav1.Time{"w1": at(-time.Second)}}))
	res, err := ComputeStatus(b, Observation{Pods: ps, WorkloadOf: of, WorkloadTotals: map[Workload]int32{web: 3, api: 2, idle: 0}, Now: t0})
	require.NoError(t, err)
	st := res.Status
	assert.Equal(t, []policyv1alpha1.WorkloadBudget{
		{Kind: "CloneSet", Name: "api", TotalReplicas: 2, DesiredAvailable: 1, CurrentAvailable: 1, UnavailableAllowed: 0},
		{Kind: "Deployment", Name: "web", TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 2, UnavailableAllowed: 0},
		{Kind: "Pod", Name: "solo", TotalReplicas: 1, DesiredAvailable: 0, CurrentAvailable: 1, UnavailableAllowed: 1},
		{Kind: "StatefulSet", Name: "idle"},
	}, st.Workloads)
	assert.Equal(t, []int32{1, 4, 3, 6}, []int32{st.UnavailableAllowed, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas})

	_, err = ComputeStatus(b, Observation{Pods: ps, WorkloadOf: map[string]Workload{}, Now: t0})
	assert.ErrorContains(t, err, "no workload observed")
}

func TestComputeStatusBoundsWorkloads(t *testing.T) {
	totals := map[Workload]int32{}
	for i := range MaxWorkloads + 5 {
		totals[Workload{Kind: "Deployment", Name: string(rune(0x4e00 + i))}] = 1
	}
	b := budget(gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubBudgetPerWorkloadAnnotation: "true"}))
	res, err := ComputeStatus(b, Observation{WorkloadTotals: totals, Now: t0})
	require.NoError(t, err)
	assert.Len(t, res.Status.Workloads, MaxWorkloads)
	assert.Equal(t, int32(MaxWorkloads+5), res.Status.TotalReplicas)
}
