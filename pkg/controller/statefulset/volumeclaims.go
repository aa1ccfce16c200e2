package statefulset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
)

// volumeClaims is what a pass found of the set's claims against its templates (gate
// StatefulSetAutoResizePVCGate): status.volumeClaims, the claims refused, the pods whose update
// waits for their claims.
type volumeClaims struct {
	checked  bool
	status   []appsv1beta1.VolumeClaimStatus
	refusals []claimupdate.Refusal
	held     map[string]bool
}

// claimsOf are the PVCs of the set's templates for ordinal, from the cache.
func (c *Controller) claimsOf(set *appsv1beta1.StatefulSet, ordinal int) claimupdate.Claims {
	out := claimupdate.Claims{}
	for _, vct := range set.Spec.VolumeClaimTemplates {
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(ClaimName(vct.Name, set.Name, ordinal))
		if err != nil || claim.DeletionTimestamp != nil {
			continue
		}
		out[vct.Name] = claim
	}
	return out
}

// updateClaims counts the set's claims against its templates and, under volumeClaimUpdateStrategy
// OnPodRollingUpdate, expands the claims smaller than their template, pod by pod in the order
// the rollout takes them (partition and pause hold them as they hold the pods), at most
// maxUnavailable pods' claims at a time; a pod's own update waits for its claims' expansion.
// Claims that cannot be expanded (refused by the API server, or differing from their template
// in more than size) are reported and do not hold their pod. Under OnDelete claims are only
// counted: a claim takes its template when it is made anew.
func (c *Controller) updateClaims(ctx context.Context, p *pass) error {
	if !c.resizeClaims || len(p.set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	p.claimState = volumeClaims{checked: true, held: map[string]bool{}}
	templates := p.set.Spec.VolumeClaimTemplates
	var all []claimupdate.Claims
	type candidate struct {
		pod  *corev1.Pod
		plan claimupdate.PodPlan
	}
	var cands []candidate
	rolling := isRolling(p.set) && (p.set.Spec.UpdateStrategy.RollingUpdate == nil || !p.set.Spec.UpdateStrategy.RollingUpdate.Paused)
	onRollingUpdate := p.set.Spec.VolumeClaimUpdateStrategy.Type == appsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	// Highest ordinal first, as the rollout goes.
	for i := len(p.slots) - 1; i >= 0; i-- {
		s := p.slots[i]
		if Terminating(s.Pod) {
			continue
		}
		claims := c.claimsOf(p.set, s.Ordinal)
		all = append(all, claims)
		if !onRollingUpdate || !rolling || s.Position < partition(p.set) {
			continue
		}
		plan := claimupdate.Plan(templates, claims)
		p.claimState.refusals = append(p.claimState.refusals, plan.Differ...)
		cands = append(cands, candidate{pod: s.Pod, plan: plan})
	}
	p.claimState.status = claimupdate.Count(templates, all)
	if len(cands) == 0 {
		return nil
	}
	limit := 1
	if ru := p.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && parallel(p.set) {
		n, err := scaled(ru.MaxUnavailable, p.wanted.Len(), 1)
		if err != nil {
			return fmt.Errorf("spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
		}
		limit = n
	}
	plans := make([]claimupdate.PodPlan, len(cands))
	for i := range cands {
		// A claim refused before is no expansion to make (nor a pod to hold) until it changes.
		plan := cands[i].plan
		refused := map[string]bool{}
		for _, r := range c.expander.Refused(plan.Expand) {
			refused[r.Claim] = true
			p.claimState.refusals = append(p.claimState.refusals, r)
		}
		var keep []claimupdate.Expansion
		for _, x := range plan.Expand {
			if !refused[x.Claim.Name] {
				keep = append(keep, x)
			}
		}
		plan.Expand = keep
		plans[i] = plan
		if plan.Pending || len(plan.Expand) > 0 {
			p.claimState.held[cands[i].pod.Name] = true
		}
	}
	var exps []claimupdate.Expansion
	for _, i := range claimupdate.Choose(plans, limit) {
		exps = append(exps, plans[i].Expand...)
	}
	if len(exps) == 0 {
		return nil
	}
	refusals, err := c.expander.Expand(ctx, c.recorder, p.set, exps)
	p.claimState.refusals = append(p.claimState.refusals, refusals...)
	// A claim refused now does not hold its pod, as one refused before does not.
	for i := range cands {
		if !plans[i].Pending && allRefused(plans[i].Expand, refusals) {
			delete(p.claimState.held, cands[i].pod.Name)
		}
	}
	return err
}

// allRefused is whether every expansion of xs (at least one) is among the refusals.
func allRefused(xs []claimupdate.Expansion, rs []claimupdate.Refusal) bool {
	if len(xs) == 0 {
		return false
	}
	for _, x := range xs {
		found := false
		for _, r := range rs {
			found = found || r.Claim == x.Claim.Name
		}
		if !found {
			return false
		}
	}
	return true
}

// claimStatus writes the pass's claim findings into st: status.volumeClaims and the
// FailedResizeVolumeClaims condition. Without the gate both are left as they are.
func claimStatus(st *appsv1beta1.StatefulSetStatus, p *pass, setCond func(message string)) {
	if !p.claimState.checked {
		return
	}
	st.VolumeClaims = p.claimState.status
	setCond(claimupdate.Message(p.claimState.refusals))
}
