package sidecarterminator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestDecide(t *testing.T) {
	never, onFailure, always := corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways
	tests := []struct {
		name string
		pod  *corev1.Pod

		wantStep     step
		wantPhase    corev1.PodPhase
		wantSidecars []string
		wantSummary  string
		// wantWhy, if set, must be contained in plan.why.
		wantWhy string
		// wantProblem, if set, must be contained in one of the problems;
		// otherwise there must be none.
		wantProblem string
	}{
		{
			name:     "restartPolicy Always is ignored",
			pod:      newPod(always, withMain("m", exited(0)), withSidecar("s", running())),
			wantStep: stepNone, wantWhy: "Always",
		},
		{
			name:     "empty restartPolicy (defaulted to Always) is ignored",
			pod:      newPod("", withMain("m", exited(0)), withSidecar("s", running())),
			wantStep: stepNone, wantWhy: "Always",
		},
		{
			name:     "pod being deleted is ignored",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s", running()), deleting),
			wantStep: stepNone, wantWhy: "deleted",
		},
		{
			name:     "Pending pod is ignored",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s", waiting()), gen.SetPodPhase(corev1.PodPending)),
			wantStep: stepNone, wantWhy: "Pending", wantSidecars: []string{"s"},
		},
		{
			name:     "no marking",
			pod:      newPod(never, withMain("m", exited(0)), withMain("n", running())),
			wantStep: stepNone, wantWhy: "no container is marked",
		},
		{
			name: "env false marks nothing and is no problem",
			pod: newPod(never, withMain("m", exited(0)),
				withContainer("s", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "false"}}, running())),
			wantStep: stepNone, wantWhy: "no container is marked",
		},
		{
			name: "invalid env value: the container is a main, with a problem",
			pod: newPod(never, withMain("m", exited(0)),
				withContainer("s", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "yes"}}, running())),
			wantStep: stepNone, wantWhy: "no container is marked", wantProblem: `"yes"`,
		},
		{
			name:     "Never, main running: wait",
			pod:      newPod(never, withMain("m", running()), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name:     "Never, main not started: wait",
			pod:      newPod(never, withMain("m", waiting()), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name:     "Never, main without a status: wait",
			pod:      newPod(never, withMain("m", noStatus()), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name:     "Never, main exited 0: Succeeded",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s", running())),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s"}, wantSummary: "m exited 0",
		},
		{
			name:     "Never, main exited 1: Failed",
			pod:      newPod(never, withMain("m", exited(1)), withSidecar("s", running())),
			wantStep: stepTerminate, wantPhase: corev1.PodFailed, wantSidecars: []string{"s"}, wantSummary: "m exited 1",
		},
		{
			name:     "Never, one of two mains failed: Failed",
			pod:      newPod(never, withMain("a", exited(0)), withSidecar("s", running()), withMain("b", exited(2))),
			wantStep: stepTerminate, wantPhase: corev1.PodFailed, wantSidecars: []string{"s"}, wantSummary: "a exited 0, b exited 2",
		},
		{
			name:     "OnFailure, main exited 1: the kubelet restarts it, wait",
			pod:      newPod(onFailure, withMain("m", exited(1)), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name:     "OnFailure, main waiting to restart: wait",
			pod:      newPod(onFailure, withMain("m", waiting()), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name:     "OnFailure, main exited 0: Succeeded",
			pod:      newPod(onFailure, withMain("m", exited(0)), withSidecar("s", running())),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s"}, wantSummary: "m exited 0",
		},
		{
			name:     "several mains, one still running: wait",
			pod:      newPod(never, withMain("a", exited(0)), withMain("b", running()), withMain("c", exited(1)), withSidecar("s", running())),
			wantStep: stepWait, wantSidecars: []string{"s"},
		},
		{
			name: "several sidecars, one already terminated: only the others",
			pod: newPod(never, withSidecar("s1", running()), withMain("m", exited(0)), withSidecar("s2", exited(0)),
				withSidecar("s3", noStatus()), withSidecarImage("s4", "busybox", waiting())),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s1", "s3", "s4"}, wantSummary: "m exited 0",
		},
		{
			name:     "a sidecar's own failure does not decide the phase",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s1", exited(1)), withSidecar("s2", running())),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s2"}, wantSummary: "m exited 0",
		},
		{
			name:     "every sidecar terminated already: nothing",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s1", exited(0)), withSidecar("s2", exited(143))),
			wantStep: stepNone, wantWhy: "every sidecar has already terminated", wantSummary: "m exited 0",
		},
		{
			name:     "only sidecars, no main: nothing, with a problem",
			pod:      newPod(never, withSidecar("s1", running()), withSidecar("s2", exited(0))),
			wantStep: stepNone, wantWhy: "no main", wantProblem: "every container is marked as a sidecar",
		},
		{
			name: "Succeeded with our condition: follow-up",
			pod: newPod(never, withMain("m", exited(0)), withSidecar("s1", running()), withSidecar("s2", exited(137)),
				gen.SetPodPhase(corev1.PodSucceeded), withRecorded(now)),
			wantStep: stepFollowUp, wantSidecars: []string{"s1"},
		},
		{
			name: "Failed with our condition, all sidecars ended: follow-up with none left",
			pod: newPod(never, withMain("m", exited(3)), withSidecar("s", exited(137)),
				gen.SetPodPhase(corev1.PodFailed), withRecorded(now)),
			wantStep: stepFollowUp,
		},
		{
			name:     "Succeeded without our condition: nothing",
			pod:      newPod(never, withMain("m", exited(0)), withSidecar("s", running()), gen.SetPodPhase(corev1.PodSucceeded)),
			wantStep: stepNone, wantWhy: "finished", wantSidecars: []string{"s"},
		},
		{
			name: "Failed with our condition False: nothing",
			pod: newPod(never, withMain("m", exited(1)), withSidecar("s", running()), gen.SetPodPhase(corev1.PodFailed),
				withCondition(corev1.ConditionFalse, now)),
			wantStep: stepNone, wantWhy: "finished", wantSidecars: []string{"s"},
		},
		{
			name: "phase back to Running with our condition: terminate again",
			pod: newPod(never, withMain("m", exited(0)), withSidecar("s", running()),
				withRecorded(now)),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s"}, wantSummary: "m exited 0",
		},
		{
			name: "init containers carrying the env are not looked at",
			pod: newPod(never, withInit("init", false, envTrue()), withInit("native", true, envImage("busybox")),
				withMain("m", exited(0)), withMain("n", running())),
			wantStep: stepNone, wantWhy: "no container is marked",
		},
		{
			name: "native sidecars are neither sidecars nor mains",
			pod: newPod(never, withInit("native", true, envTrue()),
				withMain("m", exited(0)), withSidecar("s", running())),
			wantStep: stepTerminate, wantPhase: corev1.PodSucceeded, wantSidecars: []string{"s"}, wantSummary: "m exited 0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(tc.pod)
			assert.Equal(t, tc.wantStep, p.step, "step (why %q)", p.why)
			assert.Equal(t, tc.wantPhase, p.phase, "phase")
			assert.Equal(t, tc.wantSidecars, nilIfEmpty(names(p.sidecars)), "remaining sidecars")
			assert.Equal(t, tc.wantSummary, p.summary, "summary")
			if tc.wantWhy != "" {
				assert.Contains(t, p.why, tc.wantWhy)
			}
			if tc.wantStep != stepNone {
				assert.Empty(t, p.why, "why is for stepNone")
			}
			if tc.wantProblem == "" {
				assert.Empty(t, p.problems)
			} else {
				assert.Len(t, p.problems, 1)
				for _, pr := range p.problems {
					assert.Contains(t, pr, tc.wantProblem)
				}
			}
			for _, sc := range p.sidecars {
				assert.NotContains(t, p.mains, sc.name, "a container is a main or a sidecar, not both")
			}
			for _, ic := range tc.pod.Spec.InitContainers {
				assert.NotContains(t, p.mains, ic.Name, "init container counted as a main")
				assert.NotContains(t, names(p.containers.sidecars), ic.Name, "init container counted as a sidecar")
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// decide does not write to the pod it reads: it is called on cached objects.
func TestDecideDoesNotMutate(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever, withMain("m", exited(0)), withSidecar("s", running()))
	before := pod.DeepCopy()
	_ = decide(pod)
	assert.Equal(t, before, pod)
}

func TestRecorded(t *testing.T) {
	never := corev1.RestartPolicyNever
	assert.False(t, recorded(newPod(never)), "no condition")
	assert.True(t, recorded(newPod(never, withRecorded(now))))
	assert.False(t, recorded(newPod(never, withCondition(corev1.ConditionFalse, now))))
	assert.False(t, recorded(newPod(never, withCondition(corev1.ConditionUnknown, now))))
	other := newPod(never)
	other.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	assert.False(t, recorded(other), "another condition type")
}

func TestClassify(t *testing.T) {
	lit := func(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }
	fromField := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	}
	tests := []struct {
		name string
		env  []corev1.EnvVar

		wantSidecar bool
		wantImage   string
		// wantProblem: substrings of the single problem; none when empty.
		wantProblem []string
	}{
		{name: "no env: main"},
		{name: "unrelated env: main", env: []corev1.EnvVar{lit("FOO", "true")}},
		{name: "true", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "true")}, wantSidecar: true},
		{name: "TRUE", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "TRUE")}, wantSidecar: true},
		{name: "True", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "True")}, wantSidecar: true},
		{name: "false: main, fine", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "false")}},
		{name: "FALSE: main, fine", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "FALSE")}},
		{
			name: "yes: main with a problem", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "yes")},
			wantProblem: []string{`container "c"`, `"yes"`, EnvTerminateSidecar, "main"},
		},
		{
			name: "1: main with a problem", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "1")},
			wantProblem: []string{`container "c"`, `"1"`},
		},
		{
			name: "empty: main with a problem", env: []corev1.EnvVar{lit(EnvTerminateSidecar, "")},
			wantProblem: []string{`container "c"`, `=""`},
		},
		{
			name: "valueFrom: main with a problem", env: []corev1.EnvVar{fromField(EnvTerminateSidecar)},
			wantProblem: []string{`container "c"`, "valueFrom"},
		},
		{
			name: "WITH_IMAGE with a registry and port", env: []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "127.0.0.1:5000/public/exit:1")},
			wantSidecar: true, wantImage: "127.0.0.1:5000/public/exit:1",
		},
		{
			name: "WITH_IMAGE short name", env: []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "busybox")},
			wantSidecar: true, wantImage: "busybox",
		},
		{
			name: "WITH_IMAGE by digest", env: []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "busybox@sha256:"+sha)},
			wantSidecar: true, wantImage: "busybox@sha256:" + sha,
		},
		{
			name: "WITH_IMAGE invalid: still a sidecar, no image, a problem", env: []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "UPPER CASE::x")},
			wantSidecar: true, wantProblem: []string{`container "c"`, `"UPPER CASE::x"`, "not a valid image reference"},
		},
		{name: "WITH_IMAGE empty: unset, main", env: []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "")}},
		{
			name: "WITH_IMAGE valueFrom: ignored, main with a problem", env: []corev1.EnvVar{fromField(EnvTerminateSidecarWithImage)},
			wantProblem: []string{`container "c"`, EnvTerminateSidecarWithImage, "valueFrom"},
		},
		{
			name:        "true and WITH_IMAGE",
			env:         []corev1.EnvVar{lit(EnvTerminateSidecar, "true"), lit(EnvTerminateSidecarWithImage, "busybox")},
			wantSidecar: true, wantImage: "busybox",
		},
		{
			name:        "WITH_IMAGE then false: WITH_IMAGE marks it whatever the order",
			env:         []corev1.EnvVar{lit(EnvTerminateSidecarWithImage, "busybox"), lit(EnvTerminateSidecar, "false")},
			wantSidecar: true, wantImage: "busybox",
		},
		{
			name:        "true and empty WITH_IMAGE: sidecar without image",
			env:         []corev1.EnvVar{lit(EnvTerminateSidecar, "true"), lit(EnvTerminateSidecarWithImage, "")},
			wantSidecar: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(corev1.RestartPolicyNever, withMain("first", running()), withContainer("c", tc.env, running()), withMain("last", running()))
			got := classify(pod)
			if tc.wantSidecar {
				assert.Equal(t, []string{"first", "last"}, got.mains)
				assert.Equal(t, []sidecar{{name: "c", image: tc.wantImage}}, got.sidecars)
			} else {
				assert.Equal(t, []string{"first", "c", "last"}, got.mains, "spec order kept")
				assert.Empty(t, got.sidecars)
			}
			if len(tc.wantProblem) == 0 {
				assert.Empty(t, got.problems)
				return
			}
			if assert.Len(t, got.problems, 1) {
				for _, s := range tc.wantProblem {
					assert.Contains(t, got.problems[0], s)
				}
			}
		})
	}
}

const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func TestClassifyKeepsOrderAndReportsEachContainer(t *testing.T) {
	pod := newPod(corev1.RestartPolicyNever,
		withSidecarImage("b", "busybox", running()),
		withMain("m", running()),
		withContainer("x", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "on"}}, running()),
		withSidecar("a", running()),
		withSidecarImage("bad", "Not/Valid:::", running()))
	got := classify(pod)
	assert.Equal(t, []string{"m", "x"}, got.mains)
	assert.Equal(t, []sidecar{{name: "b", image: "busybox"}, {name: "a"}, {name: "bad"}}, got.sidecars)
	if assert.Len(t, got.problems, 2) {
		assert.Contains(t, got.problems[0], `container "x"`)
		assert.Contains(t, got.problems[1], `container "bad"`)
	}
	assert.Equal(t, []string{"b", "a", "bad"}, names(got.sidecars))
	assert.Empty(t, names(nil))
}

func TestHasMarking(t *testing.T) {
	never := corev1.RestartPolicyNever
	assert.False(t, hasMarking(newPod(never, withMain("m", running()))))
	assert.True(t, hasMarking(newPod(never, withMain("m", running()), withSidecar("s", running()))))
	assert.True(t, hasMarking(newPod(never, withSidecarImage("s", "busybox", running()))))
	assert.True(t, hasMarking(newPod(never, withContainer("s", []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: "false"}}, running()))),
		"any value is a marking worth a look")
	assert.False(t, hasMarking(newPod(never, withInit("i", true, envTrue()), withMain("m", running()))),
		"init containers do not count")
}

func TestParseMechanism(t *testing.T) {
	for _, s := range []string{"phase", "crr"} {
		m, err := ParseMechanism(s)
		assert.NoError(t, err, s)
		assert.Equal(t, Mechanism(s), m)
	}
	assert.Equal(t, MechanismPhase, Mechanism("phase"))
	assert.Equal(t, MechanismCRR, Mechanism("crr"))
	for _, s := range []string{"", "Phase", "CRR", "image", "delete", " phase"} {
		m, err := ParseMechanism(s)
		if assert.Error(t, err, "%q", s) {
			assert.Contains(t, err.Error(), "unknown sidecar termination mechanism")
			assert.Contains(t, err.Error(), `"phase"`)
			assert.Contains(t, err.Error(), `"crr"`)
		}
		assert.Empty(t, m)
	}
}
