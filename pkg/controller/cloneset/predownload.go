package cloneset

import (
	"context"
	"fmt"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
)

// Image pre-download (gate PreDownloadImageForInPlaceUpdate; pkg/workload/predownload does the work):
// while a CloneSet updates in place in more than one batch, an ImagePullJob per changed image
// pulls the new image on the nodes of the pods still to be updated.

// PreDownloadInput is what the CloneSet's pre-download decision reads.
type PreDownloadInput struct {
	CloneSet *appsv1beta1.CloneSet
	// Budget is the CloneSet's strategy resolved to counts.
	Budget Budget
	Policy inplace.UpdatePolicy
	// NoResize is why pods cannot be resized, "" when they can (inplace.ResizeSupport).
	NoResize string
	predownload.Move
}

// PlanPreDownload decides whether the move from in.Current to in.Update pre-downloads images,
// and builds the jobs. It reads nothing but its input.
func PlanPreDownload(in PreDownloadInput) predownload.Plan {
	if plan, ok := predownload.Undecided(in.Update, in.UnderWay()); !ok {
		return plan
	}
	if in.Policy == inplace.PolicyReCreate {
		return predownload.IgnorePlan("pods are recreated, not updated in place")
	}
	if in.Budget.Replicas <= predownload.MinReplicas {
		return predownload.IgnorePlan(fmt.Sprintf("replicas %d, not more than %d", in.Budget.Replicas, predownload.MinReplicas))
	}
	if in.Budget.Partition == 0 && in.Budget.MaxUnavailable >= in.Budget.Replicas {
		return predownload.IgnorePlan("every pod is updated in the first batch")
	}
	if r := inplace.RouteUpdate(in.Policy, in.CurrentTemplate, in.UpdateTemplate, inPlaceOptions.WithoutResize(in.NoResize)); r.InPlace == nil {
		return predownload.IgnorePlan("the change cannot be applied in place")
	}
	cs := in.CloneSet
	var ips *pub.InPlaceUpdateStrategy
	if ru := cs.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		ips = ru.InPlaceUpdateStrategy
	}
	return predownload.Build(predownload.Request{
		Owner:        predownload.Owner{Object: cs, Kind: controllerKind, Selector: cs.Spec.Selector, Template: &cs.Spec.Template},
		Update:       in.Update,
		Images:       predownload.ChangedImages(in.UpdateTemplate, in.CurrentTemplate),
		Settings:     predownload.SettingsOf(ips, cs.Annotations, in.Budget.Replicas),
		UpdatedReady: in.UpdatedReady,
	})
}

// preDownload acts on PlanPreDownload for the pass's CloneSet, and deletes its jobs that no
// longer serve the update. It does nothing unless the gate is on.
func (c *Controller) preDownload(ctx context.Context, p *pass) error {
	if c.preDownloads == nil {
		return nil
	}
	h := p.history
	if err := c.preDownloads.DeleteStale(ctx, c.recorder, p.cs, predownload.ServedHash(h)); err != nil {
		return err
	}
	plan := PlanPreDownload(PreDownloadInput{CloneSet: p.cs, Budget: p.budget, Policy: p.policy, NoResize: p.noResize, Move: predownload.TemplatedMove(h, p.pods)})
	return c.preDownloads.Apply(ctx, c.recorder, p.cs, h.Update, plan)
}
