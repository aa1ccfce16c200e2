package resourcedistribution

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// CopyLabel marks the Secrets and ConfigMaps this controller wrote: its caches watch only
// objects carrying it (doc.go says why). The value is always "true".
const CopyLabel = "kruise.io/resourcedistribution.copy"

// The two kinds a distribution may copy.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Source is a distribution's spec.resource, read into its typed kind and normalised as the API
// server stores it, so that a stored copy compares equal to it.
type Source struct {
	Kind string
	Name string
	// Hash is the sha256 (hex) of spec.resource's raw bytes: the hash annotation's value.
	Hash      string
	Secret    *corev1.Secret
	ConfigMap *corev1.ConfigMap
}

// ParseSource reads spec.resource. It fails for anything but a core v1 Secret or ConfigMap with
// a name (the webhook refuses those; the controller then does nothing).
func ParseSource(raw []byte) (*Source, error) {
	if len(raw) == 0 {
		return nil, errors.New("spec.resource is empty")
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("reading spec.resource: %w", err)
	}
	if tm.APIVersion != "v1" || (tm.Kind != KindSecret && tm.Kind != KindConfigMap) {
		return nil, fmt.Errorf("spec.resource is %s %s: only v1 Secret and ConfigMap are supported", tm.APIVersion, tm.Kind)
	}
	sum := sha256.Sum256(raw)
	src := &Source{Kind: tm.Kind, Hash: hex.EncodeToString(sum[:])}
	var meta *metav1.ObjectMeta
	if tm.Kind == KindSecret {
		src.Secret = &corev1.Secret{}
		if err := json.Unmarshal(raw, src.Secret); err != nil {
			return nil, fmt.Errorf("reading spec.resource as a Secret: %w", err)
		}
		normaliseSecret(src.Secret)
		meta = &src.Secret.ObjectMeta
	} else {
		src.ConfigMap = &corev1.ConfigMap{}
		if err := json.Unmarshal(raw, src.ConfigMap); err != nil {
			return nil, fmt.Errorf("reading spec.resource as a ConfigMap: %w", err)
		}
		meta = &src.ConfigMap.ObjectMeta
	}
	if meta.Name == "" {
		return nil, errors.New("spec.resource has no metadata.name")
	}
	src.Name = meta.Name
	// What only the API server sets is never copied (a create carrying it would be refused).
	meta.Namespace, meta.UID, meta.ResourceVersion, meta.SelfLink, meta.Generation = "", "", "", "", 0
	meta.CreationTimestamp, meta.DeletionTimestamp, meta.DeletionGracePeriodSeconds, meta.ManagedFields = metav1.Time{}, nil, nil, nil
	return src, nil
}

// normaliseSecret does what the API server does on write: stringData folds into data, and an
// empty type is Opaque. Without it a source written with stringData would never equal its copy.
func normaliseSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	s.TypeMeta = metav1.TypeMeta{}
}

// controlledBy reports whether obj's controller is the distribution rd: by group, kind and name,
// as OpenKruise (so a distribution re-created under the same name takes its copies back).
func controlledBy(obj metav1.Object, rd *appsv1alpha1.ResourceDistribution) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && isDistributionRef(ref) && ref.Name == rd.Name
}

// isDistributionRef reports whether ref points at a ResourceDistribution, whatever its version.
func isDistributionRef(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == appsv1alpha1.SchemeGroupVersion.Group && ref.Kind == "ResourceDistribution"
}
