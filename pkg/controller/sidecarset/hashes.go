package sidecarset

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// writeHashes keeps the SidecarSet's own hash annotations equal to what its pods record
// (sidecarset.SetHashAnnotations) and returns the SidecarSet as stored. The SidecarSet
// mutating webhook writes them at admission; this covers webhooks off, SidecarSets stored
// before, and a client that wrote stale values back. The patch names the annotations only.
func (c *Controller) writeHashes(ctx context.Context, ss *appsv1beta1.SidecarSet) (*appsv1beta1.SidecarSet, error) {
	want := ss.DeepCopy()
	changed, err := sidecarrules.SetHashAnnotations(want)
	if err != nil {
		return nil, fmt.Errorf("SidecarSet %s: %w", ss.Name, err)
	}
	if !changed {
		return ss, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": ss.ResourceVersion,
		"annotations": map[string]string{
			sidecarrules.HashAnnotation:             want.Annotations[sidecarrules.HashAnnotation],
			sidecarrules.HashWithoutImageAnnotation: want.Annotations[sidecarrules.HashWithoutImageAnnotation],
		},
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding the hash annotations: %w", err)
	}
	// The resourceVersion makes the patch conditional: hashes of a spec since changed are
	// never written over the new one's (the next pass writes those).
	out, err := c.kruiseClient.AppsV1beta1().SidecarSets().Patch(ctx, ss.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("writing the hash annotations of SidecarSet %s: %w", ss.Name, err)
	}
	return out, nil
}
