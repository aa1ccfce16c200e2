// Package kruisekinds teaches kubectl's own commands (set, expose, exec)
// kruise's workloads: it registers kruise's types in kubectl's scheme and
// extends kubectl's polymorphic helpers (k8s.io/kubectl/pkg/polymorphichelpers)
// with them, so that those commands run unchanged on CloneSets, Advanced
// StatefulSets, Advanced DaemonSets and SidecarSets.
package kruisekinds

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	kubectlscheme "k8s.io/kubectl/pkg/scheme"
	"k8s.io/kubectl/pkg/util/podutils"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
)

var installOnce sync.Once

// Install registers kruise's types in kubectl's scheme and chains kruise's
// kinds in front of kubectl's polymorphic helpers. It is idempotent; the
// commands that hand work to kubectl call it when they are built.
func Install() {
	installOnce.Do(func() {
		utilruntime.Must(kruisescheme.AddToScheme(kubectlscheme.Scheme))

		updatePodSpec := polymorphichelpers.UpdatePodSpecForObjectFn
		polymorphichelpers.UpdatePodSpecForObjectFn = func(obj runtime.Object, fn func(*corev1.PodSpec) error) (bool, error) {
			if ok, err := UpdatePodSpec(obj, fn); ok || err != nil {
				return ok, err
			}
			return updatePodSpec(obj, fn)
		}

		attachable := polymorphichelpers.AttachablePodForObjectFn
		polymorphichelpers.AttachablePodForObjectFn = func(getter genericclioptions.RESTClientGetter, obj runtime.Object, timeout time.Duration) (*corev1.Pod, error) {
			if _, sel, ok := Workload(obj); ok {
				return firstPod(getter, obj, sel, timeout)
			}
			return attachable(getter, obj, timeout)
		}

		canBeExposed := polymorphichelpers.CanBeExposedFn
		polymorphichelpers.CanBeExposedFn = func(kind schema.GroupKind) error {
			if Exposable(kind) {
				return nil
			}
			return canBeExposed(kind)
		}
		mapSelector := polymorphichelpers.MapBasedSelectorForObjectFn
		polymorphichelpers.MapBasedSelectorForObjectFn = func(obj runtime.Object) (string, error) {
			if _, sel, ok := Workload(obj); ok {
				return MapSelector(sel)
			}
			return mapSelector(obj)
		}
		// Ports and protocols are those of the template's containers: ask
		// kubectl's own helpers about a pod of the template.
		protocols := polymorphichelpers.ProtocolsForObjectFn
		polymorphichelpers.ProtocolsForObjectFn = func(obj runtime.Object) (map[string]string, error) {
			return protocols(asPod(obj))
		}
		multiProtocols := polymorphichelpers.MultiProtocolsForObjectFn
		polymorphichelpers.MultiProtocolsForObjectFn = func(obj runtime.Object) (map[string][]string, error) {
			return multiProtocols(asPod(obj))
		}
		ports := polymorphichelpers.PortsForObjectFn
		polymorphichelpers.PortsForObjectFn = func(obj runtime.Object) ([]string, error) {
			return ports(asPod(obj))
		}
	})
}

// Workload returns the pod template and selector of a kruise workload
// (CloneSet, Advanced StatefulSet, Advanced DaemonSet, of either version).
func Workload(obj runtime.Object) (*corev1.PodTemplateSpec, *metav1.LabelSelector, bool) {
	switch o := obj.(type) {
	case *appsv1alpha1.CloneSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1beta1.CloneSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1alpha1.StatefulSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1beta1.StatefulSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1alpha1.DaemonSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1beta1.DaemonSet:
		return &o.Spec.Template, o.Spec.Selector, true
	}
	return nil, nil, false
}

// UpdatePodSpec runs fn on the pod spec of a kruise object: a workload's
// template, or a SidecarSet's containers and init containers seen as a pod
// spec. It reports false, nil for an object that is not kruise's.
func UpdatePodSpec(obj runtime.Object, fn func(*corev1.PodSpec) error) (bool, error) {
	if tpl, _, ok := Workload(obj); ok {
		return true, fn(&tpl.Spec)
	}
	switch o := obj.(type) {
	case *appsv1alpha1.SidecarSet:
		return true, updateSidecars(o.Spec.InitContainers, o.Spec.Containers, func(c *appsv1alpha1.SidecarContainer) *corev1.Container { return &c.Container }, fn)
	case *appsv1beta1.SidecarSet:
		return true, updateSidecars(o.Spec.InitContainers, o.Spec.Containers, func(c *appsv1beta1.SidecarContainer) *corev1.Container { return &c.Container }, fn)
	}
	return false, nil
}

// updateSidecars hands fn a pod spec made of a SidecarSet's containers and
// writes back what fn changed in them. A SidecarSet has no other pod spec
// field, so a change to any other (a service account, say) is refused.
func updateSidecars[C any](initContainers, containers []C, container func(*C) *corev1.Container, fn func(*corev1.PodSpec) error) error {
	spec := corev1.PodSpec{}
	for i := range initContainers {
		spec.InitContainers = append(spec.InitContainers, *container(&initContainers[i]).DeepCopy())
	}
	for i := range containers {
		spec.Containers = append(spec.Containers, *container(&containers[i]).DeepCopy())
	}
	if err := fn(&spec); err != nil {
		return err
	}
	if len(spec.InitContainers) != len(initContainers) || len(spec.Containers) != len(containers) {
		return fmt.Errorf("a SidecarSet's containers cannot be added or removed this way")
	}
	rest := spec
	rest.InitContainers, rest.Containers = nil, nil
	if !reflect.DeepEqual(rest, corev1.PodSpec{}) {
		return fmt.Errorf("a SidecarSet has no pod spec besides its containers: only their fields can be set")
	}
	for i := range initContainers {
		*container(&initContainers[i]) = spec.InitContainers[i]
	}
	for i := range containers {
		*container(&containers[i]) = spec.Containers[i]
	}
	return nil
}

// Exposable reports whether expose may put a Service in front of the kind:
// the kruise workloads whose pods serve under one selector.
func Exposable(kind schema.GroupKind) bool {
	return kind.Group == appsv1alpha1.SchemeGroupVersion.Group && (kind.Kind == "CloneSet" || kind.Kind == "StatefulSet")
}

// MapSelector is a workload's selector as a Service selector: match labels
// only, since a Service cannot hold expressions.
func MapSelector(sel *metav1.LabelSelector) (string, error) {
	if sel != nil && len(sel.MatchExpressions) > 0 {
		return "", fmt.Errorf("couldn't convert expressions %v to a Service selector: a Service selects by labels only", sel.MatchExpressions)
	}
	if sel == nil || len(sel.MatchLabels) == 0 {
		return "", fmt.Errorf("the workload has no matchLabels selector to give a Service")
	}
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: sel.MatchLabels}), nil
}

// asPod is a kruise workload as a pod of its template (kubectl reads ports
// and protocols of pods), and any other object unchanged.
func asPod(obj runtime.Object) runtime.Object {
	if tpl, _, ok := Workload(obj); ok {
		return &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	}
	return obj
}

// firstPod is the workload's pod kubectl would pick for a deployment: the
// most active one among those its selector selects.
func firstPod(getter genericclioptions.RESTClientGetter, obj runtime.Object, sel *metav1.LabelSelector, timeout time.Duration) (*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("the workload's selector: %w", err)
	}
	config, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	namespace := obj.(metav1.Object).GetNamespace()
	sortBy := func(pods []*corev1.Pod) sort.Interface { return sort.Reverse(podutils.ActivePods(pods)) }
	pod, _, err := polymorphichelpers.GetFirstPod(kube.CoreV1(), namespace, selector.String(), timeout, sortBy)
	return pod, err
}
