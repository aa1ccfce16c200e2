package nodepodprobe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// Shared builders of the package's tests: a pod "ns/web" of app=game on node-a, markers selecting
// app=game, their probes and policies, and NodePodProbe results.

var (
	t0 = metav1.NewTime(time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

const podUID = "uid-web"

// pod is a running pod ns/web labelled app=game on node-a, then mods.
func pod(mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{
		gen.SetPodNamespace("ns"), gen.SetPodUID(podUID), gen.SetPodResourceVersion("1"),
		gen.SetPodNodeName("node-a"), gen.SetPodPhase(corev1.PodRunning),
		gen.AddPodLabels(map[string]string{"app": "game"}),
	}
	return gen.Pod("web", append(base, mods...)...)
}

// withRecord records marks on the pod.
func withRecord(marks map[string]nodeprobe.Marks) gen.PodModifier {
	return gen.AddPodAnnotations(map[string]string{nodeprobe.MarksAnnotation: nodeprobe.EncodeMarks(marks)})
}

// ourCondition is a condition this controller wrote.
func ourCondition(t string, status corev1.ConditionStatus, msg string, at metav1.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodConditionType(t), Status: status, Reason: Reason, Message: msg,
		LastProbeTime: at, LastTransitionTime: at}
}

// marker is a PodProbeMarker in ns selecting app=game with probes.
func marker(name string, probes ...appsv1alpha1.PodContainerProbe) *appsv1alpha1.PodProbeMarker {
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}},
			Probes:   probes,
		},
	}
}

func deleting(m *appsv1alpha1.PodProbeMarker) *appsv1alpha1.PodProbeMarker {
	m.DeletionTimestamp = &t0
	m.Finalizers = []string{appsv1alpha1.PodProbeMarkerFinalizer}
	return m
}

// probe is an exec probe of container main with a condition type ("" for none) and policies.
func probe(name, conditionType string, policies ...appsv1alpha1.ProbeMarkerPolicy) appsv1alpha1.PodContainerProbe {
	return appsv1alpha1.PodContainerProbe{
		Name: name, ContainerName: "main", PodConditionType: conditionType, MarkerPolicy: policies,
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: []string{"/probe"}}}}},
	}
}

// policy marks labels and annotations for state; kv are key, value pairs, labels unless the key
// starts with "a:" (an annotation).
func policy(state appsv1alpha1.ProbeState, kv ...string) appsv1alpha1.ProbeMarkerPolicy {
	p := appsv1alpha1.ProbeMarkerPolicy{State: state}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := cutAnnotation(kv[i]); ok {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[k] = kv[i+1]
			continue
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[kv[i]] = kv[i+1]
	}
	return p
}

func cutAnnotation(k string) (string, bool) {
	if len(k) > 2 && k[:2] == "a:" {
		return k[2:], true
	}
	return k, false
}

// state is a result of probe name ("<marker>#<probe>") at t.
func state(name string, s appsv1alpha1.ProbeState, msg string, at metav1.Time) appsv1alpha1.ContainerProbeState {
	return appsv1alpha1.ContainerProbeState{Name: name, State: s, Message: msg, LastProbeTime: at, LastTransitionTime: at}
}

// entry is the pod's NodePodProbe status entry with states.
func entry(states ...appsv1alpha1.ContainerProbeState) *appsv1alpha1.PodProbeStatus {
	return &appsv1alpha1.PodProbeStatus{Name: "web", Namespace: "ns", UID: podUID, ProbeStates: states}
}

// npp is node-a's NodePodProbe with status entries.
func npp(entries ...*appsv1alpha1.PodProbeStatus) *appsv1alpha1.NodePodProbe {
	n := &appsv1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	for _, e := range entries {
		n.Status.PodProbeStatuses = append(n.Status.PodProbeStatuses, *e)
	}
	return n
}

func str(s string) *string { return &s }

// recordOf is the encoded marks record.
func recordOf(marks map[string]nodeprobe.Marks) *string { return str(nodeprobe.EncodeMarks(marks)) }
