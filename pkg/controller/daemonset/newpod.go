package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/contract/readinessgate"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/lifecycle"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

// PodRecipe is what a new pod of a DaemonSet is made from.
type PodRecipe struct {
	DaemonSet *appsv1beta1.DaemonSet
	// Template is the update revision's pod template.
	Template *corev1.PodTemplateSpec
	// Hash is the update revision's hash, for the controller-revision-hash label.
	Hash string
}

// NewPod is the DaemonSet's pod for node: the template with the daemon tolerations, a required
// node affinity pinning it to the node, the revision label and the controller reference. Its
// name is chosen here (<daemonset>-<5 random characters>, as generateName would) so that the
// creation can be expected by name before it is sent.
func NewPod(r PodRecipe, node string) *corev1.Pod {
	t := r.Template.DeepCopy()
	if inPlaceType(r.DaemonSet) {
		inplace.InjectReadinessGate(t)
	}
	if lifecycle.MarksNotReady(r.DaemonSet.Spec.Lifecycle) {
		readinessgate.Declare(t)
	}
	AddDaemonTolerations(&t.Spec)
	nodefit.PinToNode(&t.Spec, node)
	prefix := r.DaemonSet.Name + "-"
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	// Keys kruise writes on pods and decides by are never taken from the template.
	labels, annotations := appsv1beta1.WithoutReserved(t.Labels, t.Annotations)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            prefix + utilrand.String(5),
			GenerateName:    prefix,
			Namespace:       r.DaemonSet.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(r.DaemonSet, controllerKind)},
		},
		Spec: t.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = r.Hash
	return pod
}

// inPlaceType reports whether the DaemonSet's pods are updated in place when they can be.
func inPlaceType(ds *appsv1beta1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	return ds.Spec.UpdateStrategy.Type != appsv1beta1.OnDeleteDaemonSetStrategyType && ru != nil &&
		ru.Type == appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType
}
