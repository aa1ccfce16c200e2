package claimupdate

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Expander patches claims' storage requests. A patch the API server refuses (the storage class
// does not allow expansion, the claim is not dynamically provisioned, a quota) is remembered
// with the claim's resourceVersion and the size asked, and not sent again until either changes:
// the refusal is reported (condition, one Warning Event), never retried in a loop.
type Expander struct {
	Client corev1client.PersistentVolumeClaimsGetter

	mu      sync.Mutex
	refused map[types.UID]refused
}

type refused struct {
	version, size, reason string
}

// Expand sends the expansions not refused before and returns every refusal that stands (old
// and new), for the workload's condition. Events go to owner through rec (the controller's, which
// exists only once the controller runs). An error is one worth retrying.
func (e *Expander) Expand(ctx context.Context, rec record.EventRecorder, owner runtime.Object, exps []Expansion) ([]Refusal, error) {
	var out []Refusal
	var errs []error
	for _, x := range exps {
		if reason, ok := e.known(x); ok {
			out = append(out, Refusal{Claim: x.Claim.Name, Reason: reason})
			continue
		}
		r, err := e.expand(ctx, rec, owner, x)
		if err != nil {
			errs = append(errs, err)
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("expanding PVCs: %v", errs)
	}
	return out, nil
}

// Refused returns the refusals that stand for exps, without sending anything.
func (e *Expander) Refused(exps []Expansion) []Refusal {
	var out []Refusal
	for _, x := range exps {
		if reason, ok := e.known(x); ok {
			out = append(out, Refusal{Claim: x.Claim.Name, Reason: reason})
		}
	}
	return out
}

func (e *Expander) known(x Expansion) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.refused[x.Claim.UID]
	if !ok || r.version != x.Claim.ResourceVersion || r.size != x.Storage.String() {
		return "", false
	}
	return r.reason, true
}

func (e *Expander) expand(ctx context.Context, rec record.EventRecorder, owner runtime.Object, x Expansion) (*Refusal, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{
		"requests": map[string]string{string(corev1.ResourceStorage): x.Storage.String()}}}})
	if err != nil {
		return nil, err
	}
	c := x.Claim
	_, err = e.Client.PersistentVolumeClaims(c.Namespace).Patch(ctx, c.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Expanded a PVC to its template's storage request", "pvc", klog.KObj(c), "storage", x.Storage.String())
		rec.Eventf(owner, corev1.EventTypeNormal, ReasonSuccessfulResize, "resize Claim %s to %s success", c.Name, x.Storage.String())
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		reason := fmt.Sprintf("PVC %s cannot be expanded to %s: %v", c.Name, x.Storage.String(), apierrors.ReasonForError(err))
		if st, ok := err.(apierrors.APIStatus); ok && st.Status().Message != "" {
			reason = fmt.Sprintf("PVC %s cannot be expanded to %s: %s", c.Name, x.Storage.String(), st.Status().Message)
		}
		e.mu.Lock()
		if e.refused == nil {
			e.refused = map[types.UID]refused{}
		}
		e.refused[c.UID] = refused{version: c.ResourceVersion, size: x.Storage.String(), reason: reason}
		e.mu.Unlock()
		rec.Event(owner, corev1.EventTypeWarning, ReasonFailedResize, reason)
		return &Refusal{Claim: c.Name, Reason: reason}, nil
	default:
		return nil, fmt.Errorf("PVC %s: %w", c.Name, err)
	}
}

// Forget drops what is remembered of the claims with these UIDs (deleted), so that the memory
// does not outgrow the claims that exist.
func (e *Expander) Forget(gone []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, uid := range gone {
		delete(e.refused, uid)
	}
}
