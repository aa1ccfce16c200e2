package migrate

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// autoscalers warns of HorizontalPodAutoscalers that scale the source:
// they would scale it back up, and do not know the new workload.
func (o *Options) autoscalers(ctx context.Context, p *plan) []string {
	list, err := o.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{fmt.Sprintf("could not check for autoscalers of %s %s: %v", p.kind, p.meta.Name, err)}
	}
	var warnings []string
	for _, h := range list.Items {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind == p.kind && ref.Name == p.meta.Name && (ref.APIVersion == "apps/v1" || ref.APIVersion == "") {
			warnings = append(warnings, fmt.Sprintf("HorizontalPodAutoscaler %s scales %s %s: point its scaleTargetRef at %s %s (apiVersion apps.kruise.io/v1beta1) after the migration, or it keeps scaling the old one up",
				h.Name, p.kind, p.meta.Name, p.targetKind, p.targetName))
		}
	}
	return warnings
}
