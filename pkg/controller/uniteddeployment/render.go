package uniteddeployment

import (
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// RevisionLabel on a subset workload and its pods names the UnitedDeployment revision they were
// made from (OpenKruise's apps.kruise.io/controller-revision-hash; not the workloads' own
// controller-revision-hash, which they keep for their own revisions).
const RevisionLabel = "apps.kruise.io/controller-revision-hash"

// kind is the workload kind a UnitedDeployment's template makes.
type kind string

const (
	kindCloneSet            kind = "CloneSet"
	kindAdvancedStatefulSet kind = "AdvancedStatefulSet"
	kindStatefulSet         kind = "StatefulSet"
	kindDeployment          kind = "Deployment"
)

var kinds = []kind{kindCloneSet, kindAdvancedStatefulSet, kindStatefulSet, kindDeployment}

// templateKind is the kind ud's template makes, and false when no template is set.
func templateKind(ud *appsv1alpha1.UnitedDeployment) (kind, bool) {
	t := &ud.Spec.Template
	switch {
	case t.CloneSetTemplate != nil:
		return kindCloneSet, true
	case t.AdvancedStatefulSetTemplate != nil:
		return kindAdvancedStatefulSet, true
	case t.StatefulSetTemplate != nil:
		return kindStatefulSet, true
	case t.DeploymentTemplate != nil:
		return kindDeployment, true
	}
	return "", false
}

// templateMeta is the metadata of ud's template.
func templateMeta(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta {
	t := &ud.Spec.Template
	switch {
	case t.CloneSetTemplate != nil:
		return &t.CloneSetTemplate.ObjectMeta
	case t.AdvancedStatefulSetTemplate != nil:
		return &t.AdvancedStatefulSetTemplate.ObjectMeta
	case t.StatefulSetTemplate != nil:
		return &t.StatefulSetTemplate.ObjectMeta
	case t.DeploymentTemplate != nil:
		return &t.DeploymentTemplate.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}

// workload is a subset workload of any of the four kinds.
type workload interface {
	metav1.Object
	runtime.Object
}

// desired is what a subset workload should carry.
type desired struct {
	subset    string
	revision  string
	replicas  int32
	partition int32
	// maxUnavailable, when set, overrides the workload's (see unavailable).
	maxUnavailable *int32
}

// subsetOf finds a subset of the topology by name.
func subsetOf(ud *appsv1alpha1.UnitedDeployment, name string) *appsv1alpha1.Subset {
	for i := range ud.Spec.Topology.Subsets {
		if ud.Spec.Topology.Subsets[i].Name == name {
			return &ud.Spec.Topology.Subsets[i]
		}
	}
	return nil
}

// generateName is "<ud>-<subset>-", or "<ud>-" when that is no valid name prefix.
func generateName(ud, subset string) string {
	prefix := ud + "-" + subset + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return ud + "-"
	}
	return prefix
}

// render builds the subset workload of want from ud's template: a new object, not created.
// It fails only on a patch that does not apply.
func render(ud *appsv1alpha1.UnitedDeployment, want desired) (workload, error) {
	sub := subsetOf(ud, want.subset)
	if sub == nil {
		return nil, fmt.Errorf("subset %q is not in the topology", want.subset)
	}
	k, ok := templateKind(ud)
	if !ok {
		return nil, fmt.Errorf("the template sets no workload")
	}
	meta := renderMeta(ud, sub, want.revision)
	selector := ud.Spec.Selector.DeepCopy()
	if selector == nil {
		selector = &metav1.LabelSelector{}
	}
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1alpha1.SubSetNameLabelKey] = want.subset
	replicas, partition := want.replicas, want.partition

	switch k {
	case kindCloneSet:
		set := appsv1alpha1.CloneSetToV1beta1(&appsv1alpha1.CloneSet{Spec: *ud.Spec.Template.CloneSetTemplate.Spec.DeepCopy()})
		defer setMaxUnavailable(set, want.maxUnavailable)
		set.TypeMeta = metav1.TypeMeta{}
		set.ObjectMeta = mergeMeta(meta, set.ObjectMeta)
		set.Status = appsv1beta1.CloneSetStatus{}
		set.Spec.Selector, set.Spec.Replicas = selector, &replicas
		if set.Spec.UpdateStrategy.RollingUpdate == nil {
			set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateCloneSetStrategy{}
		}
		p := intstr.FromInt32(partition)
		set.Spec.UpdateStrategy.RollingUpdate.Partition = &p
		if err := renderPod(&set.Spec.Template, sub, want.revision); err != nil {
			return nil, err
		}
		return set, nil
	case kindAdvancedStatefulSet:
		set := &appsv1beta1.StatefulSet{ObjectMeta: meta, Spec: *ud.Spec.Template.AdvancedStatefulSetTemplate.Spec.DeepCopy()}
		defer setMaxUnavailable(set, want.maxUnavailable)
		set.Spec.Selector, set.Spec.Replicas = selector, &replicas
		if set.Spec.UpdateStrategy.Type == "" || set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
			if set.Spec.UpdateStrategy.RollingUpdate == nil {
				set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
			}
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
		}
		if err := renderPod(&set.Spec.Template, sub, want.revision); err != nil {
			return nil, err
		}
		return set, nil
	case kindStatefulSet:
		set := &appsv1.StatefulSet{ObjectMeta: meta, Spec: *ud.Spec.Template.StatefulSetTemplate.Spec.DeepCopy()}
		defer setMaxUnavailable(set, want.maxUnavailable)
		set.Spec.Selector, set.Spec.Replicas = selector, &replicas
		if set.Spec.UpdateStrategy.Type == "" || set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
			if set.Spec.UpdateStrategy.RollingUpdate == nil {
				set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
			}
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
		}
		if err := renderPod(&set.Spec.Template, sub, want.revision); err != nil {
			return nil, err
		}
		return set, nil
	default:
		d := &appsv1.Deployment{ObjectMeta: meta, Spec: *ud.Spec.Template.DeploymentTemplate.Spec.DeepCopy()}
		defer setMaxUnavailable(d, want.maxUnavailable)
		d.Spec.Selector, d.Spec.Replicas = selector, &replicas
		if err := renderPod(&d.Spec.Template, sub, want.revision); err != nil {
			return nil, err
		}
		return d, nil
	}
}

// renderMeta is a subset workload's metadata: the template's labels and annotations, the
// selector's labels, the revision and subset labels, the patch annotation, the generateName and
// ud as controlling owner.
func renderMeta(ud *appsv1alpha1.UnitedDeployment, sub *appsv1alpha1.Subset, revision string) metav1.ObjectMeta {
	tm := templateMeta(ud)
	labels := maps.Clone(tm.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if ud.Spec.Selector != nil {
		maps.Copy(labels, ud.Spec.Selector.MatchLabels)
	}
	labels[RevisionLabel] = revision
	labels[appsv1alpha1.SubSetNameLabelKey] = sub.Name
	annotations := maps.Clone(tm.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[appsv1alpha1.SubsetPatchAnnotation] = string(sub.Patch.Raw)
	return metav1.ObjectMeta{
		Namespace:       ud.Namespace,
		GenerateName:    generateName(ud.Name, sub.Name),
		Labels:          labels,
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment"))},
	}
}

// mergeMeta is meta with the labels and annotations conversion put in extra added (meta wins).
func mergeMeta(meta, extra metav1.ObjectMeta) metav1.ObjectMeta {
	for k, v := range extra.Labels {
		if _, ok := meta.Labels[k]; !ok {
			meta.Labels[k] = v
		}
	}
	for k, v := range extra.Annotations {
		if _, ok := meta.Annotations[k]; !ok {
			meta.Annotations[k] = v
		}
	}
	return meta
}

// renderPod labels the pod template with the subset and revision, ANDs the subset's node
// selector term into every required node-affinity term, appends its tolerations and then
// applies its patch (a strategic merge patch of the pod template).
func renderPod(tpl *corev1.PodTemplateSpec, sub *appsv1alpha1.Subset, revision string) error {
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	tpl.Labels[appsv1alpha1.SubSetNameLabelKey] = sub.Name
	tpl.Labels[RevisionLabel] = revision
	andNodeTerm(&tpl.Spec, sub.NodeSelectorTerm)
	tpl.Spec.Tolerations = append(tpl.Spec.Tolerations, sub.Tolerations...)
	if len(sub.Patch.Raw) == 0 {
		return nil
	}
	original, err := json.Marshal(tpl)
	if err != nil {
		return fmt.Errorf("encoding the pod template of subset %s: %w", sub.Name, err)
	}
	patched, err := strategicpatch.StrategicMergePatch(original, sub.Patch.Raw, &corev1.PodTemplateSpec{})
	if err != nil {
		return fmt.Errorf("applying the patch of subset %s: %w", sub.Name, err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(patched, &out); err != nil {
		return fmt.Errorf("decoding the patched pod template of subset %s: %w", sub.Name, err)
	}
	*tpl = out
	return nil
}

// andNodeTerm adds term's expressions to every required node-affinity term (to a new, single
// term when there is none). Only matchExpressions are taken, as the reference.
func andNodeTerm(spec *corev1.PodSpec, term corev1.NodeSelectorTerm) {
	if len(term.MatchExpressions) == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, term.MatchExpressions...)
	}
}
