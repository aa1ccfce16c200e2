// Package claimupdate decides what becomes of a workload's existing PVCs when its
// volumeClaimTemplates change, for Advanced StatefulSet and CloneSet alike: which claims are
// expanded to a template's larger storage request, which differ from their template in a way
// only a new claim can take, and how many pods' claims match each template (status.volumeClaims).
// The decisions are pure; Expander carries the expansions out.
package claimupdate

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ConditionType is the workload condition that lists the claims whose expansion was refused.
const ConditionType = "FailedResizeVolumeClaims"

// Event reasons, as OpenKruise's StatefulSet controller records a claim's resize.
const (
	ReasonSuccessfulResize = "SuccessfulResize"
	ReasonFailedResize     = "FailedResize"
)

// Fit is how a claim stands against its template.
type Fit int

const (
	// Fits: the claim is as the template asks; its storage request is at least the template's
	// (a claim cannot shrink, so a larger one fits a smaller template).
	Fits Fit = iota
	// Smaller: the claim fits but for a storage request below the template's; expanding it
	// makes it fit.
	Smaller
	// Differs: the claim differs from its template in something an update cannot change
	// (storage class, access modes, volume mode, selector, data source): only a new claim
	// takes the template.
	Differs
)

// Compare says how claim stands against template. Fields the template leaves unset (a nil
// storage class means the default one, which the API server wrote into the claim) are not
// compared.
func Compare(claim, template *corev1.PersistentVolumeClaim) Fit {
	if differs(&claim.Spec, &template.Spec) {
		return Differs
	}
	want, ok := template.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return Fits
	}
	have, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if ok && have.Cmp(want) >= 0 {
		return Fits
	}
	return Smaller
}

func differs(claim, template *corev1.PersistentVolumeClaimSpec) bool {
	if template.StorageClassName != nil && claim.StorageClassName != nil && *template.StorageClassName != *claim.StorageClassName {
		return true
	}
	if template.VolumeMode != nil && claim.VolumeMode != nil && *template.VolumeMode != *claim.VolumeMode {
		return true
	}
	if !sameModes(claim.AccessModes, template.AccessModes) {
		return true
	}
	if template.Selector != nil && !apiequality.Semantic.DeepEqual(template.Selector, claim.Selector) {
		return true
	}
	if template.DataSource != nil && !apiequality.Semantic.DeepEqual(template.DataSource, claim.DataSource) {
		return true
	}
	return false
}

// sameModes compares access modes as sets: their order means nothing.
func sameModes(a, b []corev1.PersistentVolumeAccessMode) bool {
	in := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range a {
		in[m] = true
	}
	seen := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range b {
		if !in[m] {
			return false
		}
		seen[m] = true
	}
	return len(seen) == len(in)
}

// Ready is whether the claim has the capacity it requests.
func Ready(claim *corev1.PersistentVolumeClaim) bool {
	want, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return claim.Status.Phase == corev1.ClaimBound
	}
	have, ok := claim.Status.Capacity[corev1.ResourceStorage]
	return ok && have.Cmp(want) >= 0
}

// Done is whether the claim's expansion needs nothing more before its pod is updated: it has
// its capacity, or only its file system is left to grow, which the kubelet does once a pod
// mounts it (as OpenKruise decides).
func Done(claim *corev1.PersistentVolumeClaim) bool {
	if Ready(claim) {
		return true
	}
	for _, c := range claim.Status.Conditions {
		if c.Type == corev1.PersistentVolumeClaimFileSystemResizePending && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Claims are one pod's claims by template name; a missing or terminating claim is absent.
type Claims map[string]*corev1.PersistentVolumeClaim

// Count is status.volumeClaims: per template, in the templates' order, the pods whose claim of
// it fits (CompatibleReplicas) and, of those, the ones whose claim has its capacity
// (CompatibleReadyReplicas).
func Count(templates []corev1.PersistentVolumeClaim, pods []Claims) []appsv1beta1.VolumeClaimStatus {
	if len(templates) == 0 {
		return nil
	}
	out := make([]appsv1beta1.VolumeClaimStatus, len(templates))
	for i := range templates {
		out[i].VolumeClaimName = templates[i].Name
		for _, claims := range pods {
			claim := claims[templates[i].Name]
			if claim == nil || Compare(claim, &templates[i]) != Fits {
				continue
			}
			out[i].CompatibleReplicas++
			if Ready(claim) {
				out[i].CompatibleReadyReplicas++
			}
		}
	}
	return out
}

// Expansion is one claim to grow to Storage.
type Expansion struct {
	Claim   *corev1.PersistentVolumeClaim
	Storage resource.Quantity
}

// Refusal is a claim that does not take its template, and why.
type Refusal struct {
	Claim  string
	Reason string
}

// PodPlan is what one pod's claims need.
type PodPlan struct {
	// Expand are the bound claims smaller than their template.
	Expand []Expansion
	// Differ are the claims only a new claim can bring to their template (Compare's Differs).
	Differ []Refusal
	// Pending: a claim is expanding (or waits to be bound before it can be): the pod's own
	// update waits for it.
	Pending bool
}

// Plan is what the pod's claims need to match the templates.
func Plan(templates []corev1.PersistentVolumeClaim, claims Claims) PodPlan {
	var p PodPlan
	for i := range templates {
		t := &templates[i]
		claim := claims[t.Name]
		if claim == nil {
			continue
		}
		switch Compare(claim, t) {
		case Differs:
			p.Differ = append(p.Differ, Refusal{Claim: claim.Name, Reason: fmt.Sprintf(
				"PVC %s differs from volumeClaimTemplate %s in more than its storage request: only a new claim takes the template", claim.Name, t.Name)})
		case Smaller:
			if claim.Status.Phase != corev1.ClaimBound {
				p.Pending = true // the API server resizes bound claims only
				continue
			}
			p.Expand = append(p.Expand, Expansion{Claim: claim, Storage: t.Spec.Resources.Requests[corev1.ResourceStorage]})
		case Fits:
			if claim.Status.Phase == corev1.ClaimBound && !Done(claim) {
				p.Pending = true
			}
		}
	}
	return p
}

// Choose picks, of the pods' plans in the order they should go, the ones whose claims are
// expanded now: as many as keep at most limit pods with an expansion under way (pods already
// Pending count first), so that a template change does not patch every claim of a large
// workload at once. Plans with nothing to expand are never chosen.
func Choose(plans []PodPlan, limit int) []int {
	busy := 0
	for _, p := range plans {
		if p.Pending {
			busy++
		}
	}
	var out []int
	for i, p := range plans {
		if len(p.Expand) == 0 {
			continue
		}
		if p.Pending {
			out = append(out, i) // already counted: its other claims go along
			continue
		}
		if busy >= max(limit, 1) {
			continue
		}
		busy++
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// Message is the condition message for refusals, sorted by claim so that it is stable.
func Message(refusals []Refusal) string {
	sorted := append([]Refusal(nil), refusals...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Claim < sorted[j].Claim })
	msg := ""
	for i, r := range sorted {
		if i > 0 {
			msg += "; "
		}
		msg += r.Reason
	}
	return msg
}
