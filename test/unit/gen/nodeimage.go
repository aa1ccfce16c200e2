package gen

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// NodeImageModifier changes a NodeImage.
type NodeImageModifier func(*appsv1beta1.NodeImage)

// NodeImage is a NodeImage named name (its node's name), changed by mods in
// order.
func NodeImage(name string, mods ...NodeImageModifier) *appsv1beta1.NodeImage {
	return apply(&appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// NodeImageFrom is a copy of ni changed by mods; ni is left as it was.
func NodeImageFrom(ni *appsv1beta1.NodeImage, mods ...NodeImageModifier) *appsv1beta1.NodeImage {
	return apply(ni.DeepCopy(), mods)
}

func SetNodeImageUID(uid types.UID) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.UID = uid }
}

func SetNodeImageResourceVersion(rv string) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.ResourceVersion = rv }
}

func SetNodeImageGeneration(g int64) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.Generation = g }
}

// SetNodeImageLabels replaces the NodeImage's labels with a copy of labels.
func SetNodeImageLabels(labels map[string]string) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.Labels = maps.Clone(labels) }
}

func SetNodeImageOwnerReferences(refs ...metav1.OwnerReference) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.OwnerReferences = refs }
}

// setNodeImageImage changes the spec of image (a repository), made empty
// first when the NodeImage has none.
func setNodeImageImage(image string, mut func(*appsv1beta1.ImageSpec)) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) {
		if ni.Spec.Images == nil {
			ni.Spec.Images = map[string]appsv1beta1.ImageSpec{}
		}
		spec := ni.Spec.Images[image]
		mut(&spec)
		ni.Spec.Images[image] = spec
	}
}

// AddNodeImageTags appends tags to those of image (a repository) in the
// NodeImage's spec.
func AddNodeImageTags(image string, tags ...appsv1beta1.ImageTagSpec) NodeImageModifier {
	return setNodeImageImage(image, func(s *appsv1beta1.ImageSpec) { s.Tags = append(s.Tags, tags...) })
}

// SetNodeImagePullSecrets sets the pull secrets of image (a repository) in
// the NodeImage's spec.
func SetNodeImagePullSecrets(image string, secrets ...appsv1beta1.ReferenceObject) NodeImageModifier {
	return setNodeImageImage(image, func(s *appsv1beta1.ImageSpec) { s.PullSecrets = secrets })
}

// SetNodeImageSandboxConfig sets the sandbox config of image (a
// repository) in the NodeImage's spec.
func SetNodeImageSandboxConfig(image string, cfg *appsv1beta1.SandboxConfig) NodeImageModifier {
	return setNodeImageImage(image, func(s *appsv1beta1.ImageSpec) { s.SandboxConfig = cfg })
}

func SetNodeImageStatus(st appsv1beta1.NodeImageStatus) NodeImageModifier {
	return func(ni *appsv1beta1.NodeImage) { ni.Status = st }
}
