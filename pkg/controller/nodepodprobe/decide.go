package nodepodprobe

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

// Reason is the reason of the pod conditions this controller writes. It also tells them apart
// from conditions of the same type written by others: a condition with this reason that no
// current probe wants is removed even if the marks record lost it (a write cut in half).
const Reason = "PodProbeMarker"

// Results are a pod's probe results, as the controller found them.
type Results struct {
	// Serverless: the pod runs on a virtual-kubelet node and gate EnablePodProbeMarkerOnServerless
	// is on. Its results are its own conditions, which the virtual node writes; this controller
	// never writes or removes a condition of such a pod.
	Serverless bool
	// Entry is the pod's entry (same uid) in its node's NodePodProbe status; nil when there is none.
	Entry *appsv1alpha1.PodProbeStatus
}

// Plan is what to write on a pod: label and annotation changes (nil: remove the key) and the
// conditions to set or remove. The zero Plan writes nothing.
type Plan struct {
	Labels           map[string]*string
	Annotations      map[string]*string
	Conditions       []corev1.PodCondition
	RemoveConditions []corev1.PodConditionType
}

// Metadata says whether the plan changes labels or annotations.
func (p Plan) Metadata() bool { return len(p.Labels)+len(p.Annotations) > 0 }

// Status says whether the plan changes conditions.
func (p Plan) Status() bool { return len(p.Conditions)+len(p.RemoveConditions) > 0 }

// Empty says whether the plan writes nothing.
func (p Plan) Empty() bool { return !p.Metadata() && !p.Status() }

// current is one probe of a PodProbeMarker that matches the pod now.
type current struct {
	name  string // nodeprobe.ProbeName
	probe *appsv1alpha1.PodContainerProbe
	// state is the result; "" while there is none yet (the probe keeps the marks it recorded).
	state appsv1alpha1.ContainerProbeState
}

// Decide is what a pod's marks should become, given the PodProbeMarkers of its namespace and its
// results. For each probe of a live marker that selects the pod and has a result:
//   - podConditionType: a condition of that type, True iff Succeeded (Failed and Unknown are False,
//     as OpenKruise), with the result's times and message; the first probe (markers by name,
//     probes in spec order) wins when two name the same type;
//   - markerPolicy: the labels and annotations of the policy whose state is the result are set,
//     the keys of the other policies removed (Unknown matches no policy: all are removed).
//
// The marks of probes that are no longer current (probe removed, marker deleted or deleting, pod no
// longer selected, pod gone from its NodePodProbe's status) are taken off, as recorded in
// nodeprobe.MarksAnnotation, except keys a current probe sets; the record is rewritten. A probe
// that is current but has no result yet keeps what it recorded. Pods being deleted, or finished,
// are left alone.
func Decide(pod *corev1.Pod, markers []*appsv1alpha1.PodProbeMarker, res Results) Plan {
	if !active(pod) {
		return Plan{}
	}
	recorded, _ := nodeprobe.ReadMarks(pod.Annotations) // a record that does not parse is rewritten
	d := newDesire()
	for _, cp := range currentProbes(pod, markers, res) {
		if cp.state.State == "" {
			if m, ok := recorded[cp.name]; ok {
				d.keep(cp.name, m)
			}
			continue
		}
		d.apply(cp, pod, res.Serverless)
	}
	for _, m := range recorded {
		d.dropLabels.Insert(m.Labels...)
		d.dropAnnos.Insert(m.Annotations...)
		if m.Condition != "" {
			d.dropConds.Insert(m.Condition)
		}
	}
	if !res.Serverless {
		for _, c := range pod.Status.Conditions {
			if c.Reason == Reason {
				d.dropConds.Insert(string(c.Type))
			}
		}
	}
	return d.plan(pod)
}

// active reports whether a pod still takes marks.
func active(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// currentProbes lists the probes of the live markers selecting the pod (markers by name, probes
// in spec order) with their results. A pod with no results at all (no NodePodProbe status entry,
// not serverless) has no current probe: its marks are all stale.
func currentProbes(pod *corev1.Pod, markers []*appsv1alpha1.PodProbeMarker, res Results) []current {
	if !res.Serverless && res.Entry == nil {
		return nil
	}
	sorted := slices.Clone(markers)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []current
	for _, m := range sorted {
		if m.DeletionTimestamp != nil || m.Namespace != pod.Namespace || !selects(m, pod) {
			continue
		}
		for i := range m.Spec.Probes {
			p := &m.Spec.Probes[i]
			cp := current{name: nodeprobe.ProbeName(m.Name, p.Name), probe: p}
			if res.Serverless {
				if p.PodConditionType == "" {
					continue // the virtual node reports a result only as a condition
				}
				cp.state = fromCondition(pod, p.PodConditionType)
			} else {
				cp.state = fromEntry(res.Entry, cp.name)
			}
			out = append(out, cp)
		}
	}
	return out
}

// selects reports whether the marker's selector matches the pod.
func selects(m *appsv1alpha1.PodProbeMarker, pod *corev1.Pod) bool {
	sel, err := metaSelector(m)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// metaSelector is the marker's selector; a missing or empty one (the webhook refuses both)
// selects nothing.
func metaSelector(m *appsv1alpha1.PodProbeMarker) (labels.Selector, error) {
	if m.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(m.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("PodProbeMarker %s/%s: %w", m.Namespace, m.Name, err)
	}
	if sel.Empty() {
		return labels.Nothing(), nil
	}
	return sel, nil
}

// fromEntry is the state named name in the pod's NodePodProbe status entry.
func fromEntry(e *appsv1alpha1.PodProbeStatus, name string) appsv1alpha1.ContainerProbeState {
	for _, s := range e.ProbeStates {
		if s.Name == name {
			return s
		}
	}
	return appsv1alpha1.ContainerProbeState{Name: name}
}

// fromCondition reads a serverless pod's result from its condition of type t: True is
// Succeeded, False is Failed; absent or Unknown is no result yet.
func fromCondition(pod *corev1.Pod, t string) appsv1alpha1.ContainerProbeState {
	c := condition(pod, corev1.PodConditionType(t))
	if c == nil {
		return appsv1alpha1.ContainerProbeState{}
	}
	switch c.Status {
	case corev1.ConditionTrue:
		return appsv1alpha1.ContainerProbeState{State: appsv1alpha1.ProbeSucceeded}
	case corev1.ConditionFalse:
		return appsv1alpha1.ContainerProbeState{State: appsv1alpha1.ProbeFailed}
	}
	return appsv1alpha1.ContainerProbeState{}
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// desire collects what the current probes want before it is compared with the pod.
type desire struct {
	labels, annos         map[string]string // to set; the first probe to name a key wins
	dropLabels, dropAnnos sets.Set[string]  // to remove, unless set or kept
	keepLabels, keepAnnos sets.Set[string]  // recorded by probes waiting for a result
	conds                 map[string]corev1.PodCondition
	dropConds, keepConds  sets.Set[string]
	// hidden are annotation keys of other policies: the controller's pod cache does not show
	// annotations kruise did not record, so these are removed blindly whenever the pod is patched.
	hidden sets.Set[string]
	record map[string]nodeprobe.Marks
}

func newDesire() *desire {
	return &desire{
		labels: map[string]string{}, annos: map[string]string{},
		dropLabels: sets.New[string](), dropAnnos: sets.New[string](),
		keepLabels: sets.New[string](), keepAnnos: sets.New[string](),
		conds: map[string]corev1.PodCondition{}, dropConds: sets.New[string](), keepConds: sets.New[string](),
		hidden: sets.New[string](), record: map[string]nodeprobe.Marks{},
	}
}

// keep protects what a probe without a result recorded, and records it again.
func (d *desire) keep(name string, m nodeprobe.Marks) {
	d.keepLabels.Insert(m.Labels...)
	d.keepAnnos.Insert(m.Annotations...)
	if m.Condition != "" {
		d.keepConds.Insert(m.Condition)
	}
	d.record[name] = m
}

// apply adds what a probe with a result wants.
func (d *desire) apply(cp current, pod *corev1.Pod, serverless bool) {
	var m nodeprobe.Marks
	if t := cp.probe.PodConditionType; t != "" && !serverless {
		if _, taken := d.conds[t]; !taken {
			d.conds[t] = wantCondition(t, cp.state)
			m.Condition = t
		}
	}
	for _, pol := range cp.probe.MarkerPolicy {
		annos := policyAnnotations(pol)
		if pol.State != cp.state.State {
			d.dropLabels.Insert(keys(pol.Labels)...)
			d.dropAnnos.Insert(keys(annos)...)
			d.hidden.Insert(keys(annos)...)
			continue
		}
		for k, v := range pol.Labels {
			if _, taken := d.labels[k]; !taken {
				d.labels[k] = v
			}
		}
		for k, v := range annos {
			if _, taken := d.annos[k]; !taken {
				d.annos[k] = v
			}
		}
		m.Labels = append(m.Labels, keys(pol.Labels)...)
		m.Annotations = append(m.Annotations, keys(annos)...)
	}
	if m.Condition != "" || len(m.Labels)+len(m.Annotations) > 0 {
		m.Labels, m.Annotations = sortedUnique(m.Labels), sortedUnique(m.Annotations)
		d.record[cp.name] = m
	}
}

// policyAnnotations are a policy's annotations but the marks record, which is this controller's
// alone: a marker that names it could otherwise have listed keys taken off, and its value would
// flip with every write.
func policyAnnotations(pol appsv1alpha1.ProbeMarkerPolicy) map[string]string {
	if _, ok := pol.Annotations[nodeprobe.MarksAnnotation]; !ok {
		return pol.Annotations
	}
	out := make(map[string]string, len(pol.Annotations))
	for k, v := range pol.Annotations {
		if k != nodeprobe.MarksAnnotation {
			out[k] = v
		}
	}
	return out
}

// wantCondition is the condition a result asks for: True iff Succeeded.
func wantCondition(t string, s appsv1alpha1.ContainerProbeState) corev1.PodCondition {
	status := corev1.ConditionFalse
	if s.State == appsv1alpha1.ProbeSucceeded {
		status = corev1.ConditionTrue
	}
	c := corev1.PodCondition{
		Type: corev1.PodConditionType(t), Status: status, Reason: Reason, Message: s.Message,
		LastProbeTime: s.LastProbeTime, LastTransitionTime: s.LastTransitionTime,
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = s.LastProbeTime
	}
	return c
}

// plan compares the desire with the pod.
func (d *desire) plan(pod *corev1.Pod) Plan {
	var p Plan
	p.Labels = diff(pod.Labels, d.labels, d.dropLabels.Difference(d.keepLabels), nil)
	p.Annotations = diff(pod.Annotations, d.annos, d.dropAnnos.Difference(d.keepAnnos), nil)
	rec, had := pod.Annotations[nodeprobe.MarksAnnotation]
	switch enc := nodeprobe.EncodeMarks(d.record); {
	case enc == "" && had:
		p.Annotations = put(p.Annotations, nodeprobe.MarksAnnotation, nil)
	case enc != "" && enc != rec:
		p.Annotations = put(p.Annotations, nodeprobe.MarksAnnotation, &enc)
	}
	if p.Metadata() {
		for k := range d.hidden {
			if _, set := d.annos[k]; !set && !d.keepAnnos.Has(k) {
				if _, seen := pod.Annotations[k]; !seen {
					p.Annotations = put(p.Annotations, k, nil)
				}
			}
		}
	}
	for _, t := range sets.List(sets.KeySet(d.conds)) {
		want := d.conds[t]
		have := condition(pod, want.Type)
		if have != nil && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue // a new probe time alone is not worth a write
		}
		if have != nil && have.Status == want.Status {
			want.LastTransitionTime = have.LastTransitionTime
		}
		p.Conditions = append(p.Conditions, want)
	}
	for _, t := range sets.List(d.dropConds.Difference(d.keepConds)) {
		if _, wanted := d.conds[t]; !wanted && condition(pod, corev1.PodConditionType(t)) != nil {
			p.RemoveConditions = append(p.RemoveConditions, corev1.PodConditionType(t))
		}
	}
	return p
}

// diff is the changes that take have to set (keys and values) and drop the keys of remove not in
// set; nil when there are none. A nil have is an empty one (OpenKruise issue #2499).
func diff(have, set map[string]string, remove sets.Set[string], out map[string]*string) map[string]*string {
	for k, v := range set {
		if cur, ok := have[k]; !ok || cur != v {
			out = put(out, k, &v)
		}
	}
	for k := range remove {
		if _, isSet := set[k]; isSet {
			continue
		}
		if _, ok := have[k]; ok {
			out = put(out, k, nil)
		}
	}
	return out
}

func put(m map[string]*string, k string, v *string) map[string]*string {
	if m == nil {
		m = map[string]*string{}
	}
	m[k] = v
	return m
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}
