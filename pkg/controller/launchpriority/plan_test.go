package launchpriority

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2/ktesting"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	webhook "github.com/nodekruise/kruise/pkg/webhook/priorityinjection"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestPlanOf(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []level
	}{
		{
			name: "the webhook's: the top level has no barrier, its key is known",
			pod:  threeLevels(),
			want: []level{
				{priority: 10, keyed: true, containers: []string{"db"}},
				{priority: 5, keyed: true, gated: true, containers: []string{"cache"}},
				{priority: 0, keyed: true, gated: true, containers: []string{"app"}},
			},
		},
		{
			name: "levels of several containers, in priority order whatever the spec order",
			pod:  newPod(waits("a", barrier, -1), top("p", prio("2")), waits("b", barrier, -1), top("q", prio("2")), waits("c", barrier, 1, prio("1"))),
			want: []level{
				{priority: 2, keyed: true, containers: []string{"p", "q"}},
				{priority: 1, keyed: true, gated: true, containers: []string{"c"}},
				{priority: -1, keyed: true, gated: true, containers: []string{"a", "b"}},
			},
		},
		{
			// Someone removed the Ordered annotation after admission: the
			// containers without a barrier still start first, but their
			// priority (now 0, as p_0's) cannot be told: no key for them.
			name: "a top level whose priority cannot be told",
			pod:  newPod(top("a"), waits("b", barrier, 0), waits("c", barrier, -1)),
			want: []level{
				{priority: 0, containers: []string{"a"}},
				{priority: 0, keyed: true, gated: true, containers: []string{"b"}},
				{priority: -1, keyed: true, gated: true, containers: []string{"c"}},
			},
		},
		{
			name: "a top priority that no longer parses: unkeyed",
			pod:  newPod(gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: "x"}), top("a"), waits("b", barrier, -1)),
			want: []level{
				{priority: 0, containers: []string{"a"}},
				{priority: -1, keyed: true, gated: true, containers: []string{"b"}},
			},
		},
		{
			name: "OpenKruise's: every container has a barrier",
			pod:  newPod(waits("a", barrier, 0), waits("b", barrier, -1)),
			want: []level{
				{priority: 0, keyed: true, gated: true, containers: []string{"a"}},
				{priority: -1, keyed: true, gated: true, containers: []string{"b"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok, err := planOf(tc.pod)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, barrier, p.configMap)
			assert.Equal(t, tc.want, p.levels)
		})
	}
	_, ok, err := planOf(newPod(top("a", prio("1")), top("b")))
	assert.False(t, ok, "no barrier: not the controller's")
	assert.NoError(t, err)
}

// A level starts only when every container of every level above it is
// satisfied, not just the one right above.
func TestDue(t *testing.T) {
	p, _, err := planOf(threeLevels())
	require.NoError(t, err)
	for _, tc := range []struct {
		mods []gen.PodModifier
		want int
	}{
		{nil, 1},
		{[]gen.PodModifier{ready("db")}, 2},
		{[]gen.PodModifier{ready("cache")}, 1},
		{[]gen.PodModifier{ready("db", "cache")}, 3},
		{[]gen.PodModifier{unready("db"), ready("cache")}, 1},
		{[]gen.PodModifier{ready("db", "cache", "app")}, 3},
	} {
		pod := threeLevels(tc.mods...)
		assert.Equal(t, tc.want, p.due(pod), "%+v", pod.Status.ContainerStatuses)
	}
}

// The webhook's patch and the controller agree: a pod created with
// generateName is admitted with a barrier on a ConfigMap named from its
// generateName and the request, the API server then names the pod, and the
// controller creates the ConfigMap the containers read.
func TestAdmittedGenerateNamePod(t *testing.T) {
	admitted := gen.Pod("", gen.SetPodGenerateName("web-6d4cf56db6-"), top("proxy", prio("1")), top("app"))
	patch, err := webhook.Mutate(webhook.Request{Namespace: testNS, UID: "request-uid", Pod: admitted})
	require.NoError(t, err)
	require.Len(t, patch, 1)
	env, ok := patch[0].Value.([]corev1.EnvVar)
	require.True(t, ok, "%T", patch[0].Value)
	admitted.Spec.Containers[1].Env = env

	// The API server draws the name after the webhooks.
	pod := gen.PodFrom(admitted, func(p *corev1.Pod) { p.Name = "web-6d4cf56db6-x7k2p" }, gen.SetPodNamespace(testNS),
		gen.SetPodUID(types.UID("pod-uid-2")), gen.SetPodRestartPolicy(corev1.RestartPolicyAlways), gen.SetPodStartTime(started))
	f := newFixture(t, pod)
	_, ctx := ktesting.NewTestContext(t)
	_, err = f.ctrl.sync(ctx, testNS+"/"+pod.Name)
	require.NoError(t, err)
	cmName := lp.GeneratedBarrierName("web-6d4cf56db6-", "request-uid")
	assert.Empty(t, validation.IsDNS1123Subdomain(cmName))
	assert.Equal(t, set("p_1"), f.keys(t, cmName))
	cm := f.configMap(t, cmName)
	require.Len(t, cm.OwnerReferences, 1)
	assert.Equal(t, "web-6d4cf56db6-x7k2p", cm.OwnerReferences[0].Name)
	assert.Equal(t, types.UID("pod-uid-2"), cm.OwnerReferences[0].UID)
}
