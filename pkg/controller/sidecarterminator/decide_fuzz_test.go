package sidecarterminator

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fuzzEnv is one marking env var: a literal value, or a valueFrom.
func fuzzEnv(name, value string, from bool) corev1.EnvVar {
	if from {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	}
	return corev1.EnvVar{Name: name, Value: value}
}

// FuzzClassify reads arbitrary values of KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT
// and KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE (literal or
// valueFrom), plus an env var of arbitrary name. Invariants: no panic;
// deterministic; every regular container is exactly one of main or sidecar,
// in spec order; the flag marks a sidecar exactly for "true" in any case, a
// non-empty image value marks one too; a value other than true/false, or a
// valueFrom, is a problem that names the container, never a silent choice;
// a sidecar's image is the _WITH_IMAGE value exactly when that value is a
// valid reference, and an invalid one is a problem.
func FuzzClassify(f *testing.F) {
	for _, s := range []struct {
		flag, image  string
		flagFrom     bool
		imageFrom    bool
		otherEnvName string
	}{
		{"true", "", false, false, "FOO"},
		{"TRUE", "", false, false, "FOO"},
		{"True", "busybox:1.36", false, false, "FOO"},
		{"false", "", false, false, "FOO"},
		{"yes", "", false, false, "FOO"},
		{"", "", false, false, "FOO"},
		{" true", "", false, false, "FOO"},
		{"true", "", true, false, "FOO"},
		{"", "registry.io/exit:1", false, true, "FOO"},
		{"false", "registry.io/exit@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false, false, "FOO"},
		{"false", "Not A Reference", false, false, "FOO"},
		{"true", "", false, false, EnvTerminateSidecar},
		{"true", "", false, false, EnvTerminateSidecarWithImage},
		{"ｔｒｕｅ", "\x00", false, false, ""},
	} {
		f.Add(s.flag, s.image, s.flagFrom, s.imageFrom, s.otherEnvName)
	}
	f.Fuzz(func(t *testing.T, flag, image string, flagFrom, imageFrom bool, otherEnvName string) {
		pod := &corev1.Pod{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{
				{Name: "main"},
				{Name: "flag", Env: []corev1.EnvVar{fuzzEnv(EnvTerminateSidecar, flag, flagFrom)}},
				{Name: "image", Env: []corev1.EnvVar{fuzzEnv(EnvTerminateSidecarWithImage, image, imageFrom)}},
				{Name: "both", Env: []corev1.EnvVar{fuzzEnv(EnvTerminateSidecar, flag, flagFrom), fuzzEnv(EnvTerminateSidecarWithImage, image, imageFrom)}},
				{Name: "other", Env: []corev1.EnvVar{{Name: otherEnvName, Value: flag}}},
			},
		}}
		got := classify(pod)
		if !reflect.DeepEqual(got, classify(pod)) {
			t.Fatalf("classify is not deterministic")
		}
		if !hasMarking(pod) {
			t.Fatalf("hasMarking is false for a pod with marked containers")
		}

		// Partition, in spec order.
		all := append(append([]string{}, got.mains...), names(got.sidecars)...)
		slices.Sort(all)
		want := []string{"both", "flag", "image", "main", "other"}
		if !slices.Equal(all, want) {
			t.Fatalf("mains %v and sidecars %v are not a partition of %v", got.mains, names(got.sidecars), want)
		}
		order := map[string]int{"main": 0, "flag": 1, "image": 2, "both": 3, "other": 4}
		for _, list := range [][]string{got.mains, names(got.sidecars)} {
			for i := 1; i < len(list); i++ {
				if order[list[i-1]] > order[list[i]] {
					t.Fatalf("%v is not in spec order", list)
				}
			}
		}

		flagMarks := !flagFrom && strings.EqualFold(flag, "true")
		imageMarks := !imageFrom && image != ""
		_, refErr := name.ParseReference(image, name.WeakValidation)
		wantImage := ""
		if imageMarks && refErr == nil {
			wantImage = image
		}
		marked := map[string]bool{"main": false, "flag": flagMarks, "image": imageMarks, "both": flagMarks || imageMarks}
		images := map[string]string{"image": wantImage, "both": wantImage}
		for c, m := range marked {
			if slices.Contains(names(got.sidecars), c) != m {
				t.Fatalf("container %q: sidecar %t, want %t (flag %q from %t, image %q from %t)", c, !m, m, flag, flagFrom, image, imageFrom)
			}
		}
		for _, sc := range got.sidecars {
			if sc.name == "other" {
				continue
			}
			if sc.image != images[sc.name] {
				t.Fatalf("sidecar %q: image %q, want %q", sc.name, sc.image, images[sc.name])
			}
		}

		problemsFor := func(c string) int {
			n := 0
			for _, p := range got.problems {
				if p == "" {
					t.Fatalf("empty problem")
				}
				if strings.HasPrefix(p, "container "+strconv.Quote(c)+":") {
					n++
				}
			}
			return n
		}
		flagProblem := flagFrom || !(strings.EqualFold(flag, "true") || strings.EqualFold(flag, "false"))
		imageProblem := imageFrom || (image != "" && refErr != nil)
		wantProblems := map[string]int{"main": 0, "flag": b2i(flagProblem), "image": b2i(imageProblem), "both": b2i(flagProblem) + b2i(imageProblem)}
		for c, n := range wantProblems {
			if got := problemsFor(c); got != n {
				t.Fatalf("container %q: %d problems, want %d: %q", c, got, n, classify(pod).problems)
			}
		}
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzDecide builds a Job pod from fuzzed parts (restart policy, phase,
// deletion, the recorded condition, the states and exit codes of a main and
// of two sidecars, and the marking values) and checks the decision.
// Invariants: no panic; deterministic; stepNone always says why; the
// sidecars to stop are marked and not terminated; stepTerminate only for a
// Running Never/OnFailure pod whose mains have all terminated, with phase
// Failed exactly when a main failed (never under OnFailure); stepFollowUp
// only for a finished pod whose outcome this controller recorded.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), uint8(1), false, uint8(0), uint8(1), int32(0), uint8(0), uint8(0), "true", "")
	f.Add(uint8(0), uint8(1), false, uint8(0), uint8(1), int32(3), uint8(0), uint8(2), "true", "")
	f.Add(uint8(1), uint8(1), false, uint8(0), uint8(1), int32(3), uint8(0), uint8(0), "TRUE", "busybox")
	f.Add(uint8(1), uint8(1), false, uint8(0), uint8(1), int32(0), uint8(0), uint8(0), "true", "")
	f.Add(uint8(0), uint8(2), false, uint8(1), uint8(1), int32(0), uint8(1), uint8(1), "true", "")
	f.Add(uint8(0), uint8(3), false, uint8(2), uint8(1), int32(1), uint8(1), uint8(1), "true", "")
	f.Add(uint8(2), uint8(1), false, uint8(0), uint8(1), int32(0), uint8(0), uint8(0), "true", "")
	f.Add(uint8(0), uint8(1), true, uint8(0), uint8(1), int32(0), uint8(0), uint8(0), "true", "")
	f.Add(uint8(0), uint8(1), false, uint8(0), uint8(0), int32(0), uint8(0), uint8(0), "true", "")
	f.Add(uint8(0), uint8(1), false, uint8(0), uint8(2), int32(-1), uint8(3), uint8(0), "yes", "not a ref")
	f.Add(uint8(0), uint8(0), false, uint8(0), uint8(1), int32(0), uint8(0), uint8(0), "true", "")
	f.Fuzz(func(t *testing.T, policy, phase uint8, deleting bool, cond, mainState uint8, mainExit int32, side1State, side2State uint8, flag, image string) {
		policies := []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways, ""}
		phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, ""}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "job-pod", Namespace: "ns"},
			Spec: corev1.PodSpec{
				RestartPolicy: policies[int(policy)%len(policies)],
				Containers: []corev1.Container{
					{Name: "main"},
					{Name: "side1", Env: []corev1.EnvVar{{Name: EnvTerminateSidecar, Value: flag}}},
					{Name: "side2", Env: []corev1.EnvVar{{Name: EnvTerminateSidecarWithImage, Value: image}}},
				},
			},
			Status: corev1.PodStatus{Phase: phases[int(phase)%len(phases)]},
		}
		if deleting {
			pod.DeletionTimestamp = &metav1.Time{}
		}
		switch cond % 3 {
		case 1:
			pod.Status.Conditions = []corev1.PodCondition{{Type: ConditionSidecarTerminated, Status: corev1.ConditionTrue}}
		case 2:
			pod.Status.Conditions = []corev1.PodCondition{{Type: ConditionSidecarTerminated, Status: corev1.ConditionFalse}}
		}
		addStatus := func(name string, state uint8, exit int32) {
			st := corev1.ContainerStatus{Name: name}
			switch state % 4 {
			case 0:
				st.State.Running = &corev1.ContainerStateRunning{}
			case 1:
				st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit}
			case 2:
				st.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
			default:
				return // no status yet
			}
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, st)
		}
		addStatus("main", mainState, mainExit)
		addStatus("side1", side1State, 143)
		addStatus("side2", side2State, 0)

		p := decide(pod)
		if !reflect.DeepEqual(p, decide(pod)) {
			t.Fatalf("decide is not deterministic")
		}
		if p.step == stepNone && p.why == "" {
			t.Fatalf("stepNone without a reason: %+v", p)
		}
		terminated := map[string]*corev1.ContainerStateTerminated{}
		for _, st := range pod.Status.ContainerStatuses {
			terminated[st.Name] = st.State.Terminated
		}
		for _, sc := range p.sidecars {
			if !slices.Contains(names(p.containers.sidecars), sc.name) {
				t.Fatalf("%q to stop is not a marked sidecar", sc.name)
			}
			if terminated[sc.name] != nil {
				t.Fatalf("%q to stop has terminated", sc.name)
			}
		}
		jobPolicy := pod.Spec.RestartPolicy == corev1.RestartPolicyNever || pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
		switch p.step {
		case stepTerminate:
			if !jobPolicy || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || len(p.sidecars) == 0 {
				t.Fatalf("stepTerminate for policy %q, phase %q, deleting %t, %d sidecars", pod.Spec.RestartPolicy, pod.Status.Phase, deleting, len(p.sidecars))
			}
			failed := false
			for _, m := range p.mains {
				tm := terminated[m]
				if tm == nil {
					t.Fatalf("stepTerminate with main %q not terminated", m)
				}
				failed = failed || tm.ExitCode != 0
			}
			if failed && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
				t.Fatalf("stepTerminate under OnFailure with a failed main")
			}
			if want := map[bool]corev1.PodPhase{false: corev1.PodSucceeded, true: corev1.PodFailed}[failed]; p.phase != want {
				t.Fatalf("phase %q, want %q", p.phase, want)
			}
		case stepFollowUp:
			if !jobPolicy || (pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed) || !recorded(pod) {
				t.Fatalf("stepFollowUp for policy %q, phase %q, recorded %t", pod.Spec.RestartPolicy, pod.Status.Phase, recorded(pod))
			}
		case stepWait:
			if !jobPolicy || pod.Status.Phase != corev1.PodRunning {
				t.Fatalf("stepWait for policy %q, phase %q", pod.Spec.RestartPolicy, pod.Status.Phase)
			}
		}
	})
}
