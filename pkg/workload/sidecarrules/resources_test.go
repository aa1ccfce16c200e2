package sidecarrules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// sized is a container with limits and requests given as "cpu/memory" ("" for none, "-" for one
// resource left out).
func sized(name, limits, requests string) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: resourceList(limits), Requests: resourceList(requests)}}
}

func resourceList(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	out := corev1.ResourceList{}
	var cpu, mem string
	for i := range s {
		if s[i] == '/' {
			cpu, mem = s[:i], s[i+1:]
		}
	}
	if cpu != "-" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "-" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

func nativeSidecar(c corev1.Container) corev1.Container {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

func resourcesPolicy(mode appsv1beta1.TargetContainersModeType, regex string, limits *appsv1beta1.ResourceExprLimits, requests *appsv1beta1.ResourceExprRequests) *appsv1beta1.ResourcesPolicy {
	return &appsv1beta1.ResourcesPolicy{TargetContainersMode: mode, TargetContainersNameRegex: regex,
		ResourcesExpr: appsv1beta1.ResourcesExpr{Limits: limits, Requests: requests}}
}

func TestPolicyResources(t *testing.T) {
	sum, max := appsv1beta1.TargetContainersModeSum, appsv1beta1.TargetContainersModeMax
	twoApps := []corev1.Container{sized("large-engine-v4", "200m/200Mi", "50m/100Mi"), sized("large-engine-v8", "400m/400Mi", "100m/200Mi")}
	halves := &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%", Memory: "200Mi"}
	halfRequests := &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%", Memory: "100Mi"}
	cases := []struct {
		name         string
		init         []corev1.Container
		containers   []corev1.Container
		injected     []string
		policy       *appsv1beta1.ResourcesPolicy
		limits, reqs string
		noLimits     bool
		noRequests   bool
		err          string
	}{
		{
			name: "sum, percentages and constants", containers: twoApps,
			policy: resourcesPolicy(sum, ".*", halves, halfRequests),
			limits: "300m/200Mi", reqs: "75m/100Mi",
		},
		{
			name: "max, regex over both", containers: twoApps,
			policy: resourcesPolicy(max, "^large.engine.v.*$",
				&appsv1beta1.ResourceExprLimits{CPU: "max(cpu*50%, 50m)", Memory: "200Mi"},
				&appsv1beta1.ResourceExprRequests{CPU: "max(cpu*50%, 50m)", Memory: "100Mi"}),
			limits: "200m/200Mi", reqs: "50m/100Mi",
		},
		{
			name: "the regex picks one", containers: twoApps,
			policy: resourcesPolicy(sum, "^large.engine.v4$",
				&appsv1beta1.ResourceExprLimits{CPU: "max(cpu*50%, 50m)", Memory: "200Mi"},
				&appsv1beta1.ResourceExprRequests{CPU: "max(cpu*50%, 50m)", Memory: "100Mi"}),
			limits: "100m/200Mi", reqs: "50m/100Mi",
		},
		{
			name: "the regex is not anchored", containers: twoApps,
			policy: resourcesPolicy(sum, "v8", halves, nil),
			limits: "200m/200Mi", noRequests: true,
		},
		{
			name:       "sum: a target without a cpu limit leaves cpu unlimited",
			containers: []corev1.Container{sized("a", "200m/200Mi", "100m/100Mi"), sized("b", "-/400Mi", "50m/200Mi")},
			policy: resourcesPolicy(sum, ".*", &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%", Memory: "memory*30%"},
				&appsv1beta1.ResourceExprRequests{CPU: "cpu*30%", Memory: "memory*20%"}),
			limits: "-/180Mi", reqs: "45m/60Mi",
		},
		{
			name:       "max: a target without a memory limit leaves memory unlimited, a constant too",
			containers: []corev1.Container{sized("a", "200m/200Mi", "100m/100Mi"), sized("b", "400m/-", "200m/-")},
			policy: resourcesPolicy(max, ".*", &appsv1beta1.ResourceExprLimits{CPU: "cpu*40%", Memory: "300Mi"},
				&appsv1beta1.ResourceExprRequests{CPU: "cpu*25%", Memory: "memory*20%"}),
			limits: "160m/-", reqs: "50m/20Mi",
		},
		{
			name: "no limit at all: no limits", containers: []corev1.Container{sized("a", "", "100m/100Mi")},
			policy:   resourcesPolicy(sum, ".*", halves, halfRequests),
			noLimits: true, reqs: "50m/100Mi",
		},
		{
			name:       "sum: a target without requests counts 0",
			containers: []corev1.Container{sized("a", "200m/200Mi", "100m/100Mi"), sized("b", "400m/400Mi", "")},
			policy: resourcesPolicy(sum, ".*", &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%", Memory: "memory*30%"},
				&appsv1beta1.ResourceExprRequests{CPU: "cpu*30%", Memory: "memory*20%"}),
			limits: "300m/180Mi", reqs: "30m/20Mi",
		},
		{
			name: "no requests at all: requests of 0", containers: []corev1.Container{sized("a", "1/1Gi", "")},
			policy:   resourcesPolicy(sum, ".*", nil, &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%", Memory: "memory"}),
			noLimits: true, reqs: "0/0",
		},
		{
			name: "an empty expression sets nothing", containers: twoApps,
			policy: resourcesPolicy(sum, ".*", &appsv1beta1.ResourceExprLimits{CPU: "cpu"}, &appsv1beta1.ResourceExprRequests{Memory: "memory"}),
			limits: "600m/-", reqs: "-/300Mi",
		},
		{
			name: "native sidecars are targets, run-once init containers and injected containers are not",
			init: []corev1.Container{sized("app-init", "9/9Gi", "9/9Gi"), nativeSidecar(sized("app-native", "400m/800Mi", "200m/400Mi")),
				nativeSidecar(sized("app-mesh", "9/9Gi", "9/9Gi"))},
			containers: []corev1.Container{sized("app-main", "600m/1200Mi", "300m/600Mi"), sized("other", "9/9Gi", "9/9Gi"),
				sized("app-proxy", "9/9Gi", "9/9Gi")},
			injected: []string{"app-mesh", "app-proxy"},
			policy: resourcesPolicy(sum, "^app.*$",
				&appsv1beta1.ResourceExprLimits{CPU: "max(cpu*30%, 50m)", Memory: "max(memory*25%, 100Mi)"},
				&appsv1beta1.ResourceExprRequests{CPU: "cpu*20%", Memory: "memory*15%"}),
			limits: "300m/500Mi", reqs: "100m/150Mi",
		},
		{
			name: "no target", containers: twoApps, policy: resourcesPolicy(sum, "^nonexistent$", halves, nil),
			err: `no container of the pod (large-engine-v4, large-engine-v8) matches targetContainersNameRegex "^nonexistent$"`,
		},
		{
			name: "only injected containers match", containers: twoApps, injected: []string{"large-engine-v4", "large-engine-v8"},
			policy: resourcesPolicy(sum, ".*", halves, nil), err: "no container of the pod",
		},
		{
			name: "a bad regex", containers: twoApps, policy: resourcesPolicy(sum, "(", halves, nil),
			err: `targetContainersNameRegex "(": error parsing regexp`,
		},
		{
			name: "an unknown mode", containers: twoApps, policy: resourcesPolicy("avg", ".*", halves, nil),
			err: `targetContainersMode "avg" is neither sum nor max`,
		},
		{
			name: "an expression that fails for this pod", containers: twoApps,
			policy: resourcesPolicy(sum, ".*", &appsv1beta1.ResourceExprLimits{CPU: "cpu - 1"}, nil),
			err:    `resourcesExpr.limits.cpu "cpu - 1" with cpu 600m: the result -400m is negative`,
		},
		{
			name: "an expression that does not parse", containers: twoApps,
			policy: resourcesPolicy(sum, ".*", nil, &appsv1beta1.ResourceExprRequests{Memory: "memory *"}),
			err:    `resourcesExpr.requests.memory "memory *": unexpected end of expression`,
		},
		{
			name: "a request above its limit", containers: twoApps,
			policy: resourcesPolicy(sum, ".*", &appsv1beta1.ResourceExprLimits{CPU: "100m"}, &appsv1beta1.ResourceExprRequests{CPU: "cpu"}),
			err:    "the cpu request 150m is above the cpu limit 100m",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.init, Containers: tc.containers}}
			before := pod.DeepCopy()
			injected := map[string]bool{}
			for _, n := range tc.injected {
				injected[n] = true
			}
			limits, requests, err := PolicyResources(pod, tc.policy, injected)
			assert.Equal(t, before, pod, "the pod is read, not changed")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			if tc.noLimits {
				assert.Nil(t, limits)
			} else {
				assert.Equal(t, tc.limits, render(limits))
			}
			if tc.noRequests {
				assert.Nil(t, requests)
			} else {
				assert.Equal(t, tc.reqs, render(requests))
			}
		})
	}
}

// render writes l as resourceList reads it.
func render(l corev1.ResourceList) string {
	part := func(name corev1.ResourceName) string {
		if q, ok := l[name]; ok {
			return q.String()
		}
		return "-"
	}
	return part(corev1.ResourceCPU) + "/" + part(corev1.ResourceMemory)
}
