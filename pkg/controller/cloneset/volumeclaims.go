package cloneset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/claimupdate"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// podClaims are the PVCs of the pod's instance ID by template name, and whether it has a PVC of
// its instance ID no template names (a template removed).
func podClaims(p *pass, pod *corev1.Pod) (claimupdate.Claims, bool) {
	id := pod.Labels[appsv1beta1.CloneSetInstanceID]
	out := claimupdate.Claims{}
	if id == "" {
		return out, false
	}
	byName := map[string]string{}
	for _, t := range p.cs.Spec.VolumeClaimTemplates {
		byName[ClaimName(t.Name, p.cs.Name, id)] = t.Name
	}
	extra := false
	for _, cl := range p.claims {
		if cl.Labels[appsv1beta1.CloneSetInstanceID] != id || cl.DeletionTimestamp != nil {
			continue
		}
		if t, ok := byName[cl.Name]; ok {
			out[t] = cl
		} else {
			extra = true
		}
	}
	return out, extra
}

// ClaimsChanged is whether the pod's PVCs no longer match the volumeClaimTemplates in a way only
// new PVCs can: a template added or removed, or a PVC differing from its template in more than
// a smaller storage request (which expansion takes care of). The pod is then recreated rather
// than updated in place (gate RecreatePodWhenChangeVCTInCloneSetGate), and gets new PVCs, since
// the CloneSet deletes the PVCs of the pods it deletes.
func ClaimsChanged(templates []corev1.PersistentVolumeClaim, claims claimupdate.Claims, extra bool) bool {
	if extra {
		return true
	}
	for i := range templates {
		claim := claims[templates[i].Name]
		if claim == nil || claimupdate.Compare(claim, &templates[i]) == claimupdate.Differs {
			return true
		}
	}
	return false
}

// claimRoute turns an in-place route into a recreation when the pod's PVCs no longer match the
// templates (RecreatePodWhenChangeVCTInCloneSetGate). InPlaceOnly keeps its in-place update, as
// in OpenKruise (a claim change never refuses an update); ReCreate recreates anyway.
func (c *Controller) claimRoute(p *pass, pod *corev1.Pod, r inplace.Route) inplace.Route {
	if !c.claimTemplates || p.policy != inplace.PolicyInPlaceIfPossible || r.Recreate || r.Refused != nil {
		return r
	}
	claims, extra := podClaims(p, pod)
	if ClaimsChanged(p.cs.Spec.VolumeClaimTemplates, claims, extra) {
		return inplace.Route{Recreate: true}
	}
	return r
}

// expandClaims grows the PVCs of active pods whose template's storage request grew (gate
// RecreatePodWhenChangeVCTInCloneSetGate), at most maxUnavailable pods' PVCs under way at a time;
// a PVC that cannot be expanded is reported in p.claimRefusals (condition
// FailedResizeVolumeClaims) and by one Warning Event. The rollout does not wait for it: the
// CloneSet's pods have no claim update strategy, a template's size is no revision.
func (c *Controller) expandClaims(ctx context.Context, p *pass) error {
	if !c.claimTemplates || len(p.cs.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	p.claimsChecked = true
	plans := make([]claimupdate.PodPlan, 0, len(p.pods))
	for _, pod := range p.pods {
		claims, _ := podClaims(p, pod)
		plan := claimupdate.Plan(p.cs.Spec.VolumeClaimTemplates, claims)
		p.claimRefusals = append(p.claimRefusals, c.expander.Refused(plan.Expand)...)
		var keep []claimupdate.Expansion
		for _, x := range plan.Expand {
			if len(c.expander.Refused([]claimupdate.Expansion{x})) == 0 {
				keep = append(keep, x)
			}
		}
		plan.Expand = keep
		plans = append(plans, plan)
	}
	var exps []claimupdate.Expansion
	for _, i := range claimupdate.Choose(plans, p.budget.MaxUnavailable) {
		exps = append(exps, plans[i].Expand...)
	}
	if len(exps) == 0 {
		return nil
	}
	refusals, err := c.expander.Expand(ctx, c.recorder, p.cs, exps)
	p.claimRefusals = append(p.claimRefusals, refusals...)
	return err
}

// claimUpdated follows a PVC's expansion, for the next PVCs to expand; only when the controller
// acts on claim templates.
func (c *Controller) claimUpdated(old, cur any) {
	if !c.claimTemplates {
		return
	}
	o, ok1 := old.(*corev1.PersistentVolumeClaim)
	n, ok2 := cur.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 || (apiequality.Semantic.DeepEqual(o.Status, n.Status) && apiequality.Semantic.DeepEqual(o.Spec.Resources, n.Spec.Resources)) {
		return
	}
	if key, ok := c.podEvents.OwnerKey(n); ok {
		c.queue.Add(key)
	}
}

// forgetClaim drops what the expander remembers of a deleted PVC.
func (c *Controller) forgetClaim(uid types.UID) { c.expander.Forget([]types.UID{uid}) }
