package statefulset

import (
	"context"
	"fmt"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
)

// Image pre-download (gate PreDownloadImageForInPlaceUpdate, as the CloneSet's; pkg/workload/predownload
// does the work): while a set updates its pods in place in more than one batch, an ImagePullJob
// per changed image pulls the new image on the nodes of the pods still to be updated.

// PreDownloadInput is what the StatefulSet's pre-download decision reads.
type PreDownloadInput struct {
	StatefulSet *appsv1beta1.StatefulSet
	// NoResize is why pods cannot be resized, "" when they can (inplace.ResizeSupport).
	NoResize string
	predownload.Move
}

// PlanPreDownload decides whether the set's move from in.Current to in.Update pre-downloads
// images, and builds the jobs. It reads nothing but its input. The rules are the reference's:
// a rolling update with an in-place policy, more than MinReplicas replicas, more than one batch
// (a partition, or fewer pods at once than replicas: maxUnavailable counts only under Parallel
// pod management, as the rollout does), and a change that is applied in place. The settings
// are the imagePreDownload* fields of rollingUpdate.inPlaceUpdateStrategy or, unset, the
// set's annotations (the reference reads the annotations only).
func PlanPreDownload(in PreDownloadInput) (predownload.Plan, error) {
	set := in.StatefulSet
	if plan, ok := predownload.Undecided(in.Update, in.UnderWay()); !ok {
		return plan, nil
	}
	ru := set.Spec.UpdateStrategy.RollingUpdate
	policy := policyOf(set)
	if !isRolling(set) || ru == nil || policy == inplace.PolicyReCreate {
		return predownload.IgnorePlan("pods are recreated, not updated in place"), nil
	}
	replicas := Replicas(set)
	if replicas <= predownload.MinReplicas {
		return predownload.IgnorePlan(fmt.Sprintf("replicas %d, not more than %d", replicas, predownload.MinReplicas)), nil
	}
	maxUnavailable := 1
	if parallel(set) {
		n, err := scaled(ru.MaxUnavailable, replicas, 1)
		if err != nil {
			return predownload.Plan{}, fmt.Errorf("spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
		}
		maxUnavailable = n
	}
	if partition(set) == 0 && maxUnavailable >= replicas {
		return predownload.IgnorePlan("every pod is updated in the first batch"), nil
	}
	if r := inplace.RouteUpdate(policy, in.CurrentTemplate, in.UpdateTemplate, inPlaceOptions.WithoutResize(in.NoResize)); r.InPlace == nil {
		return predownload.IgnorePlan("the change cannot be applied in place"), nil
	}
	return predownload.Build(predownload.Request{
		Owner:        predownload.Owner{Object: set, Kind: controllerKind, Selector: set.Spec.Selector, Template: &set.Spec.Template},
		Update:       in.Update,
		Images:       predownload.ChangedImages(in.UpdateTemplate, in.CurrentTemplate),
		Settings:     predownload.SettingsOf(ru.InPlaceUpdateStrategy, set.Annotations, replicas),
		UpdatedReady: in.UpdatedReady,
	}), nil
}

// preDownload acts on PlanPreDownload for the pass's set, and deletes its jobs that no longer
// serve the update. It does nothing unless the gate is on.
func (c *Controller) preDownload(ctx context.Context, p *pass) error {
	if c.preDownloads == nil {
		return nil
	}
	h := p.history
	if err := c.preDownloads.DeleteStale(ctx, c.recorder, p.set, predownload.ServedHash(h)); err != nil {
		return fmt.Errorf("pre-download: %w", err)
	}
	plan, err := PlanPreDownload(PreDownloadInput{StatefulSet: p.set, NoResize: p.noResize, Move: predownload.TemplatedMove(h, p.pods)})
	if err != nil {
		return nil // a bad maxUnavailable: the rollout fails on it and says so
	}
	if err := c.preDownloads.Apply(ctx, c.recorder, p.set, h.Update, plan); err != nil {
		return fmt.Errorf("pre-download: %w", err)
	}
	return nil
}
