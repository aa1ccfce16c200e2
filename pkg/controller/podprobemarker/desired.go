package podprobemarker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

// Reasons of the Events recorded on PodProbeMarkers: what kept some of their probes off the
// NodePodProbes.
const (
	// ReasonExecRefused: the requester may not create pods/exec on some pods.
	ReasonExecRefused = "ExecProbesRefused"
	// ReasonNoRequester: nothing vouches for who created the marker, so no exec probe runs.
	ReasonNoRequester = "NoRequester"
	// ReasonPortUnresolved: a probe names a port its container does not declare.
	ReasonPortUnresolved = "PortUnresolved"
)

// marker is what the node specs read of a PodProbeMarker that is not being deleted.
type marker struct {
	key       string // namespace/name
	name      string
	namespace string
	selector  labels.Selector
	probes    []appsv1alpha1.PodContainerProbe
	hasExec   bool
	// requester is who may have the exec probes run (nil: no one); noRequester says why not.
	requester   *ejobaccess.Requester
	noRequester string
}

// markerOf reads ppm; webhooksOff means no requester annotation is trusted (a user could have
// written it). An invalid selector is an error: the marker selects nothing.
func markerOf(ppm *appsv1alpha1.PodProbeMarker, webhooksOff bool) (*marker, error) {
	if ppm.Spec.Selector == nil {
		return nil, fmt.Errorf("spec.selector is not set")
	}
	sel, err := metav1.LabelSelectorAsSelector(ppm.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	m := &marker{key: ppm.Namespace + "/" + ppm.Name, name: ppm.Name, namespace: ppm.Namespace, selector: sel, probes: ppm.Spec.Probes}
	for _, p := range ppm.Spec.Probes {
		if p.Probe.Exec != nil {
			m.hasExec = true
		}
	}
	switch r, err := nodeprobe.RequesterOf(ppm.Annotations); {
	case webhooksOff:
		m.noRequester = "kruise's webhooks are off (--webhook-enabled=false): nothing vouches for " + nodeprobe.RequesterAnnotation
	case err != nil:
		m.noRequester = err.Error()
	default:
		m.requester = &r
	}
	return m, nil
}

// active reports whether a pod runs or will: not finished, not being deleted.
func active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// initialized reports whether the pod's Initialized condition is True.
func initialized(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// counted reports whether a pod the selector matches counts in matchedPods: active, scheduled
// and initialized (OpenKruise's rule; serverless pods count too).
func counted(pod *corev1.Pod) bool {
	return active(pod) && pod.Spec.NodeName != "" && initialized(pod)
}

// probed reports whether a pod's probes are listed in its node's NodePodProbe: counted, and
// with an IP (TCP and HTTP probes reach it there).
func probed(pod *corev1.Pod) bool {
	return counted(pod) && pod.Status.PodIP != ""
}

// execKey is one question of the exec gate: may the requester of marker exec into pod?
type execKey struct {
	marker string
	pod    types.UID
}

// verdict is the exec gate's answer.
type verdict struct {
	allowed bool
	// denied names the refused permission and the authorizer's reason.
	denied string
}

// question is what the exec gate must answer before a node's spec is decided.
type question struct {
	key       execKey
	requester ejobaccess.Requester
	namespace string
	pod       string
}

// nodeInput is what a node's NodePodProbe spec is decided from.
type nodeInput struct {
	// pods are the pods bound to the node.
	pods []*corev1.Pod
	// markers are the PodProbeMarkers (not being deleted) of the pods' namespaces.
	markers map[string][]*marker
	// liveness: gate EnhancedLivenessProbe is on; the pods' enhanced liveness probes are listed.
	liveness bool
	// exec holds the exec gate's answers to questions(); a missing one counts as refused.
	exec map[execKey]verdict
}

// questions lists what the exec gate must answer: one per (marker with exec probes and a
// requester, pod it probes).
func questions(in nodeInput) []question {
	var out []question
	for _, pod := range in.pods {
		if !probed(pod) {
			continue
		}
		for _, m := range in.markers[pod.Namespace] {
			if m.hasExec && m.requester != nil && m.selector.Matches(labels.Set(pod.Labels)) {
				out = append(out, question{key: execKey{m.key, pod.UID}, requester: *m.requester, namespace: pod.Namespace, pod: pod.Name})
			}
		}
	}
	return out
}

// nodeOutput is the decided spec and, per marker key and Event reason, what was left out.
type nodeOutput struct {
	spec     appsv1alpha1.NodePodProbeSpec
	problems map[string]map[string][]string
	// livenessProblems are the enhanced liveness probes left out ("ns/pod: why").
	livenessProblems []string
}

func (o *nodeOutput) problem(markerKey, reason, line string) {
	if o.problems == nil {
		o.problems = map[string]map[string][]string{}
	}
	if o.problems[markerKey] == nil {
		o.problems[markerKey] = map[string][]string{}
	}
	o.problems[markerKey][reason] = append(o.problems[markerKey][reason], line)
}

// desired decides a node's NodePodProbe spec: an entry per probed pod with at least one probe,
// sorted by namespace, name and uid, its probes sorted by name.
func desired(in nodeInput) nodeOutput {
	var out nodeOutput
	noRequester := map[string]bool{}
	for _, pod := range in.pods {
		if !probed(pod) {
			continue
		}
		var probes []appsv1alpha1.ContainerProbe
		for _, m := range in.markers[pod.Namespace] {
			if !m.selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			execOK := false
			if m.hasExec {
				switch v, asked := in.exec[execKey{m.key, pod.UID}]; {
				case m.requester == nil:
					if !noRequester[m.key] {
						noRequester[m.key] = true
						out.problem(m.key, ReasonNoRequester, "exec probes run in no pod: "+m.noRequester)
					}
				case asked && v.allowed:
					execOK = true
				case asked:
					out.problem(m.key, ReasonExecRefused, fmt.Sprintf("pod %s: %s may not %s (%s)", pod.Name, m.requester.Username, nodeprobe.ExecCheck, v.denied))
				}
			}
			for _, p := range m.probes {
				if p.Probe.Exec != nil && !execOK {
					continue
				}
				spec, err := resolvePorts(&p.Probe.Probe, pod, p.ContainerName)
				if err != nil {
					out.problem(m.key, ReasonPortUnresolved, fmt.Sprintf("pod %s: probe %s: %v", pod.Name, p.Name, err))
					continue
				}
				probes = append(probes, appsv1alpha1.ContainerProbe{Name: nodeprobe.ProbeName(m.name, p.Name), ContainerName: p.ContainerName,
					Probe: appsv1alpha1.ContainerProbeSpec{Probe: *spec}})
			}
		}
		if in.liveness {
			lp, problems := livenessProbes(pod)
			probes = append(probes, lp...)
			out.livenessProblems = append(out.livenessProblems, problems...)
		}
		if len(probes) == 0 {
			continue
		}
		slices.SortStableFunc(probes, func(a, b appsv1alpha1.ContainerProbe) int { return cmp.Compare(a.Name, b.Name) })
		// A name twice (a marker admitted without the webhook's checks) is listed once.
		probes = slices.CompactFunc(probes, func(a, b appsv1alpha1.ContainerProbe) bool { return a.Name == b.Name })
		out.spec.PodProbes = append(out.spec.PodProbes, appsv1alpha1.PodProbe{Name: pod.Name, Namespace: pod.Namespace,
			UID: string(pod.UID), IP: pod.Status.PodIP, Probes: probes})
	}
	slices.SortFunc(out.spec.PodProbes, func(a, b appsv1alpha1.PodProbe) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	for _, reasons := range out.problems {
		for _, lines := range reasons {
			slices.Sort(lines)
		}
	}
	return out
}

// livenessProbes are the pod's enhanced liveness probes, from the container-probe-context
// annotation (written at the pod's creation by the pod webhook), and what was left out.
func livenessProbes(pod *corev1.Pod) ([]appsv1alpha1.ContainerProbe, []string) {
	ctx, err := nodeprobe.ReadProbeContext(pod.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	if err != nil {
		return nil, []string{pod.Namespace + "/" + pod.Name + ": " + err.Error()}
	}
	var out []appsv1alpha1.ContainerProbe
	var problems []string
	for _, c := range ctx {
		if c.LivenessProbe == nil || c.Name == "" {
			continue
		}
		spec, err := resolvePorts(c.LivenessProbe, pod, c.Name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s: container %s: %v", pod.Namespace, pod.Name, c.Name, err))
			continue
		}
		out = append(out, appsv1alpha1.ContainerProbe{Name: nodeprobe.LivenessProbeName(c.Name), ContainerName: c.Name,
			Probe: appsv1alpha1.ContainerProbeSpec{Probe: *spec}})
	}
	return out, problems
}

// resolvePorts is a copy of probe whose httpGet or tcpSocket port, when a name, is the number
// container declares under that name (or the number the name spells, as the kubelet accepts).
func resolvePorts(probe *corev1.Probe, pod *corev1.Pod, container string) (*corev1.Probe, error) {
	out := probe.DeepCopy()
	var port *intstr.IntOrString
	switch {
	case out.HTTPGet != nil:
		port = &out.HTTPGet.Port
	case out.TCPSocket != nil:
		port = &out.TCPSocket.Port
	default:
		return out, nil
	}
	if port.Type == intstr.Int {
		return out, nil
	}
	n, err := portNumber(pod, container, port.StrVal)
	if err != nil {
		return nil, err
	}
	*port = intstr.FromInt32(n)
	return out, nil
}

// portNumber is the number of the port named name in container.
func portNumber(pod *corev1.Pod, container, name string) (int32, error) {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort, nil
			}
		}
	}
	if n, err := strconv.ParseInt(name, 10, 32); err == nil && n > 0 && n < 65536 {
		return int32(n), nil
	}
	return 0, fmt.Errorf("port %q is not a port of container %s", name, container)
}
