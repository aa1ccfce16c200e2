package validate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// OpenKruise's allow-list of the pod annotations a SidecarSet may patch
// (patchPodMetadata) is JSON under sidecarset.PatchAllowListKey of ConfigMap
// sidecarset.ConfigurationName, in the namespace kruise runs in. The SidecarSet
// webhook is where OpenKruise checks it, so that a pod's creation never
// depends on it.
const (
	kruiseConfigurationName = sidecarrules.ConfigurationName
	patchAllowListKey       = sidecarrules.PatchAllowListKey
)

// PatchAllowCheck judges ss's patchPodMetadata against the allow-list's JSON
// (raw; "" when the ConfigMap or its key is missing): nil when allowed, else
// why not (a malformed allow-list included). kruise-controller passes the
// injection's check with the gate SidecarSetPatchPodMetadataDefaultsAllowed.
type PatchAllowCheck func(ss *appsv1beta1.SidecarSet, raw string) error

// PatchAllowList is what the SidecarSet webhook needs to check the
// allow-list: the ConfigMaps of kruise's namespace and the check.
type PatchAllowList struct {
	ConfigMaps corev1client.ConfigMapsGetter
	Check      PatchAllowCheck
}

// readPatchAllowList is the allow-list's JSON, "" when there is none.
func (l *sidecarSetLookup) readPatchAllowList(ctx context.Context) (string, error) {
	cm, err := l.patchAllow.ConfigMaps.ConfigMaps(l.namespace).Get(ctx, kruiseConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading ConfigMap %s/%s: %w", l.namespace, kruiseConfigurationName, err)
	}
	return cm.Data[patchAllowListKey], nil
}

// checkPatchAllowed refuses a patchPodMetadata the allow-list does not allow;
// on UPDATE only when patchPodMetadata changes, so that a SidecarSet stored
// before the allow-list changed can still be updated in other fields.
func (l *sidecarSetLookup) checkPatchAllowed(ctx context.Context, ss, old *appsv1beta1.SidecarSet) (field.ErrorList, error) {
	if l.patchAllow == nil || len(ss.Spec.PatchPodMetadata) == 0 ||
		(old != nil && equality.Semantic.DeepEqual(old.Spec.PatchPodMetadata, ss.Spec.PatchPodMetadata)) {
		return nil, nil
	}
	raw, err := l.readPatchAllowList(ctx)
	if err != nil {
		return nil, err
	}
	refusal := l.patchAllow.Check(ss, raw)
	if refusal == nil {
		return nil, nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "patchPodMetadata"),
		fmt.Sprintf("%v (ConfigMap %s/%s, key %s)", refusal, l.namespace, kruiseConfigurationName, patchAllowListKey))}, nil
}
