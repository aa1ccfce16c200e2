package daemonset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
)

// Image pre-download (gate PreDownloadImageForDaemonSetUpdate; pkg/workload/predownload does the work):
// while a DaemonSet updates its pods in place in more than one batch, an ImagePullJob per
// changed image pulls the new image on the nodes whose pods are still to be updated, so that a
// node's turn is a container restart rather than a pull. The settings are the DaemonSet's
// apps.kruise.io/image-predownload-* annotations, as in the reference.

// PreDownloadInput is what the DaemonSet's pre-download decision reads.
type PreDownloadInput struct {
	DaemonSet *appsv1beta1.DaemonSet
	// Budget is the strategy resolved against Desired, the nodes that should run a pod.
	Budget  Budget
	Desired int
	// Update is the update revision and UpdateTemplate its pod template.
	Update         *appsv1.ControllerRevision
	UpdateTemplate *corev1.PodTemplateSpec
	// OldTemplates are the templates of the pods not yet at Update, one per revision (nil for a
	// revision no longer in the history); none when no pod is left to update.
	OldTemplates []*corev1.PodTemplateSpec
	// UpdatedReady counts the pods at Update that are ready.
	UpdatedReady int
	// NoResize is why pods cannot be resized, "" when they can (inplace.ResizeSupport).
	NoResize string
}

// PlanPreDownload decides whether the DaemonSet's update pre-downloads images, and builds the
// jobs. It reads nothing but its input. Unlike the reference, which pre-downloads whatever the
// update type, it ignores an update that deletes its pods (the new pods pull for themselves)
// and one whose change cannot be applied in place, and it honours the minimum of updated ready
// pods (the reference reads the annotation and leaves it unused).
func PlanPreDownload(in PreDownloadInput) predownload.Plan {
	if plan, ok := predownload.Undecided(in.Update, len(in.OldTemplates) > 0); !ok {
		return plan
	}
	ds := in.DaemonSet
	if !inPlaceType(ds) {
		return predownload.IgnorePlan("pods are recreated, not updated in place")
	}
	if in.Budget.Partition == 0 && in.Budget.MaxUnavailable >= in.Desired {
		return predownload.IgnorePlan("every pod is updated in the first batch")
	}
	var inPlace []*corev1.PodTemplateSpec
	for _, old := range in.OldTemplates {
		if old == nil || in.UpdateTemplate == nil {
			continue
		}
		if _, err := inplace.Plan(old, in.UpdateTemplate, inPlaceOptions.WithoutResize(in.NoResize)); err == nil {
			inPlace = append(inPlace, old)
		}
	}
	if len(inPlace) == 0 {
		return predownload.IgnorePlan("the change cannot be applied in place")
	}
	return predownload.Build(predownload.Request{
		Owner:        predownload.Owner{Object: ds, Kind: controllerKind, Selector: ds.Spec.Selector, Template: &ds.Spec.Template},
		Update:       in.Update,
		Images:       predownload.ChangedImages(in.UpdateTemplate, inPlace...),
		Settings:     predownload.SettingsOf(nil, ds.Annotations, in.Desired),
		UpdatedReady: in.UpdatedReady,
	})
}

// preDownload acts on PlanPreDownload for the pass's DaemonSet, and deletes its jobs that no
// longer serve the update. It does nothing unless the gate is on.
func (c *Controller) preDownload(ctx context.Context, p *pass) error {
	if c.preDownloads == nil {
		return nil
	}
	hash := p.history.updateHash()
	in := PreDownloadInput{DaemonSet: p.ds, Budget: p.budget, Desired: p.desired, Update: p.history.Update, UpdateTemplate: p.history.template(hash),
		NoResize: p.noResize}
	seen := map[string]bool{}
	for _, n := range p.nodes {
		for _, pod := range n.Pods {
			rev := podstate.Revision(pod)
			switch {
			case Terminating(pod):
			case rev == hash:
				if Ready(pod) {
					in.UpdatedReady++
				}
			case !seen[rev]:
				seen[rev] = true
				in.OldTemplates = append(in.OldTemplates, p.history.template(rev))
			}
		}
	}
	updateHash := hash
	if len(in.OldTemplates) == 0 {
		updateHash = "" // the update is done
	}
	if err := c.preDownloads.DeleteStale(ctx, c.recorder, p.ds, updateHash); err != nil {
		return fmt.Errorf("pre-download: %w", err)
	}
	if err := c.preDownloads.Apply(ctx, c.recorder, p.ds, p.history.Update, PlanPreDownload(in)); err != nil {
		return fmt.Errorf("pre-download: %w", err)
	}
	return nil
}
