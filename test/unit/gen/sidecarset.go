package gen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// SidecarSetModifier changes a SidecarSet.
type SidecarSetModifier func(*appsv1beta1.SidecarSet)

// SidecarSet is a (cluster-scoped) v1beta1 SidecarSet named name, with UID name, changed by
// mods in order.
func SidecarSet(name string, mods ...SidecarSetModifier) *appsv1beta1.SidecarSet {
	return apply(&appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}, mods)
}

// SidecarSetFrom is a copy of ss changed by mods; ss is left as it was.
func SidecarSetFrom(ss *appsv1beta1.SidecarSet, mods ...SidecarSetModifier) *appsv1beta1.SidecarSet {
	return apply(ss.DeepCopy(), mods)
}

// SetSidecarSetSelector selects pods by matchLabels.
func SetSidecarSetSelector(matchLabels map[string]string) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
}

// AddSidecarSetContainer appends c to spec.containers.
func AddSidecarSetContainer(c corev1.Container) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers = append(ss.Spec.Containers, appsv1beta1.SidecarContainer{Container: c})
	}
}

// AddSidecarSetInitContainer appends c to spec.initContainers (a native sidecar when its
// restartPolicy is Always).
func AddSidecarSetInitContainer(c corev1.Container) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, appsv1beta1.SidecarContainer{Container: c})
	}
}

// SetSidecarSetImage sets the image of the container or init container named name.
func SetSidecarSetImage(name, image string) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) {
		for _, list := range [][]appsv1beta1.SidecarContainer{ss.Spec.Containers, ss.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == name {
					list[i].Image = image
				}
			}
		}
	}
}

// SetSidecarSetUpdateStrategy sets spec.updateStrategy.
func SetSidecarSetUpdateStrategy(s appsv1beta1.SidecarSetUpdateStrategy) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy = s }
}

// SetSidecarSetPartition sets spec.updateStrategy.partition.
func SetSidecarSetPartition(p intstr.IntOrString) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.Partition = &p }
}

// SetSidecarSetMaxUnavailable sets spec.updateStrategy.maxUnavailable.
func SetSidecarSetMaxUnavailable(m intstr.IntOrString) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.MaxUnavailable = &m }
}

// SetSidecarSetGeneration sets metadata.generation.
func SetSidecarSetGeneration(g int64) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) { ss.Generation = g }
}

// SetSidecarSetResourceVersion sets metadata.resourceVersion.
func SetSidecarSetResourceVersion(rv string) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) { ss.ResourceVersion = rv }
}

// SetSidecarSetUpgradeStrategy sets the upgradeStrategy of the container named name.
func SetSidecarSetUpgradeStrategy(name string, s appsv1beta1.SidecarContainerUpgradeStrategy) SidecarSetModifier {
	return func(ss *appsv1beta1.SidecarSet) {
		for i := range ss.Spec.Containers {
			if ss.Spec.Containers[i].Name == name {
				ss.Spec.Containers[i].UpgradeStrategy = s
			}
		}
	}
}
