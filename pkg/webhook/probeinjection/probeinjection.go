// Package probeinjection is the pod webhook of gate EnablePodProbeMarkerOnServerless: at a pod's
// creation it writes, as OpenKruise does, the probes of the PodProbeMarkers that select it in
// kruise.io/podprobe (JSON list, markerPolicy left out: a virtual node runs them and reports pod
// conditions, which kruise-controller turns into the marks) and their names in
// kruise.io/podprobemarker-list. A pod's node is not known at creation, so, as in OpenKruise,
// every selected pod is annotated; on a normal node the annotations are unused.
//
// The virtual node runs what the annotation says, beyond kruise-controller's per-pod exec gate,
// so an exec probe is written only when its marker's requester (nodeprobe.RequesterAnnotation)
// may create pods/exec on the pod (by name when it has one) or across the namespace; OpenKruise
// writes them all.
//
// Its configuration's failurePolicy is Ignore, fixed: every pod created outside kube-system and
// kruise's namespace is sent (a PodProbeMarker's selector can match any pod), and an outage must
// not stop pod creation; a pod created meanwhile lacks the annotations, so its virtual node does
// not probe it, which is what the gate off would do.
package probeinjection

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisev1alpha1 "github.com/nodekruise/kruise/pkg/client/clientset/versioned/typed/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served.
	Path = "/mutate-pod-podprobemarker"
	// Name names it in the webhook server's metrics and logs.
	Name = "pod-podprobemarker-mutate"
)

// Webhook annotates pods at creation with the probes of the PodProbeMarkers (read from markers,
// at each request) that select them, asking sars about exec probes. Pods of kube-system and
// kruiseNamespace are left alone (podscope).
func Webhook(markers kruisev1alpha1.PodProbeMarkersGetter, sars authorizationv1client.SubjectAccessReviewsGetter, kruiseNamespace string) server.Webhook {
	w := &webhook{markers: markers, sars: sars, kruiseNamespace: kruiseNamespace}
	return server.Webhook{Name: Name, Path: Path, Admitter: server.AdmitFunc(w.admit)}
}

type webhook struct {
	markers         kruisev1alpha1.PodProbeMarkersGetter
	sars            authorizationv1client.SubjectAccessReviewsGetter
	kruiseNamespace string
}

func (w *webhook) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Operation != admissionv1.Create || req.SubResource != "" || req.Resource.Group != "" || req.Resource.Resource != "pods" ||
		podscope.Excluded(req.Namespace, w.kruiseNamespace) {
		return server.Allowed()
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return server.Errored(fmt.Errorf("decoding the pod: %w", err))
	}
	markers, err := w.markersFor(ctx, req.Namespace, pod)
	if err != nil {
		return server.Errored(err)
	}
	mayExec := func(m *appsv1alpha1.PodProbeMarker) bool {
		ok, err := w.mayExec(ctx, m, req.Namespace, pod.Name)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Leaving out the exec probes of a PodProbeMarker", "marker", klog.KObj(m))
		}
		return ok
	}
	probes, names := Matched(pod, markers, mayExec)
	if len(probes) == 0 {
		return server.Allowed()
	}
	patch, err := Patch(pod, probes, names)
	if err != nil {
		return server.Errored(err)
	}
	return server.Patched(patch)
}

// mayExec says whether m's requester may create pods/exec on the pod name (when known) or across
// namespace; a marker without a requester (admitted without kruise's webhooks) may not.
func (w *webhook) mayExec(ctx context.Context, m *appsv1alpha1.PodProbeMarker, namespace, name string) (bool, error) {
	r, err := nodeprobe.RequesterOf(m.Annotations)
	if err != nil {
		return false, err
	}
	targets := []string{""}
	if name != "" {
		targets = append(targets, name)
	}
	for _, target := range targets {
		d, err := nodeprobe.AskExec(ctx, w.sars.SubjectAccessReviews(), r, namespace, target)
		if err != nil {
			return false, err
		}
		if d.Allowed {
			return true, nil
		}
	}
	return false, nil
}

// markersFor are the markers of the namespace that select pod: those its
// kruise.io/podprobemarker-list names when it has one (OpenKruise reads them alone; a name gone
// is skipped), else all of them; either way only those whose selector matches its labels.
func (w *webhook) markersFor(ctx context.Context, namespace string, pod *corev1.Pod) ([]appsv1alpha1.PodProbeMarker, error) {
	client := w.markers.PodProbeMarkers(namespace)
	if list := pod.Annotations[appsv1alpha1.PodProbeMarkerListAnnotationKey]; list != "" {
		var out []appsv1alpha1.PodProbeMarker
		for _, name := range strings.Split(list, ",") {
			m, err := client.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				klog.FromContext(ctx).V(4).Info("PodProbeMarker named by the pod is gone", "marker", klog.KRef(namespace, name))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading PodProbeMarker %s: %w", name, err)
			}
			if Selects(m, pod) {
				out = append(out, *m)
			}
		}
		return out, nil
	}
	all, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the PodProbeMarkers: %w", err)
	}
	var out []appsv1alpha1.PodProbeMarker
	for _, m := range all.Items {
		if Selects(&m, pod) {
			out = append(out, m)
		}
	}
	return out, nil
}

// Selects says whether m's selector matches pod; a missing, empty or malformed selector matches
// nothing.
func Selects(m *appsv1alpha1.PodProbeMarker, pod *corev1.Pod) bool {
	if m.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(m.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels))
}

// Matched are the probes of markers (in their order) that pod carries: those with a
// podConditionType, of a container of the pod (or a restartable init container), the first of
// each condition type and of each container and probe name, markerPolicy left out, and exec
// probes only of markers mayExec allows (asked once per marker); and the sorted names of the
// markers they come from.
func Matched(pod *corev1.Pod, markers []appsv1alpha1.PodProbeMarker, mayExec func(*appsv1alpha1.PodProbeMarker) bool) ([]appsv1alpha1.PodContainerProbe, []string) {
	containers := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers[c.Name] = true
		}
	}
	var probes []appsv1alpha1.PodContainerProbe
	conditions, keys, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range markers {
		m := &markers[i]
		execAsked, execAllowed := false, false
		for _, p := range m.Spec.Probes {
			key := p.ContainerName + "/" + p.Name
			if p.PodConditionType == "" || conditions[p.PodConditionType] || keys[key] || !containers[p.ContainerName] {
				continue
			}
			if p.Probe.Exec != nil {
				if !execAsked {
					execAsked, execAllowed = true, mayExec(m)
				}
				if !execAllowed {
					continue
				}
			}
			conditions[p.PodConditionType], keys[key], names[m.Name] = true, true, true
			p.MarkerPolicy = nil
			probes = append(probes, p)
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	return probes, list
}

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Patch is the JSON patch writing the two annotations on pod.
func Patch(pod *corev1.Pod, probes []appsv1alpha1.PodContainerProbe, markers []string) ([]byte, error) {
	raw, err := json.Marshal(probes)
	if err != nil {
		return nil, fmt.Errorf("encoding the probes: %w", err)
	}
	values := map[string]string{
		appsv1alpha1.PodProbeMarkerAnnotationKey:     string(raw),
		appsv1alpha1.PodProbeMarkerListAnnotationKey: strings.Join(markers, ","),
	}
	var ops []op
	if pod.Annotations == nil {
		ops = []op{{"add", "/metadata/annotations", values}}
	} else {
		for _, k := range []string{appsv1alpha1.PodProbeMarkerAnnotationKey, appsv1alpha1.PodProbeMarkerListAnnotationKey} {
			// "add" replaces a value already there.
			ops = append(ops, op{"add", "/metadata/annotations/" + strings.ReplaceAll(k, "/", "~1"), values[k]})
		}
	}
	return json.Marshal(ops)
}
