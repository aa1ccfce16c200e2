package statefulset

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/workload/expectations"
)

// setTypeMeta is what a set's owner reference on a PVC names.
var setTypeMeta = metav1.TypeMeta{APIVersion: controllerKind.GroupVersion().String(), Kind: controllerKind.Kind}

// syncClaims gives every pod of the set its missing PVCs (a PVC deleted under a pod that has not
// started is made again) and every PVC of the set's templates the owner references its
// retention policy asks for. PVCs not named after a template and an ordinal of the set are left
// alone.
func (c *Controller) syncClaims(ctx context.Context, p *pass) error {
	if len(p.set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	for _, pod := range p.pods {
		ordinal, ok := OrdinalOf(p.set.Name, pod.Name)
		if !ok {
			continue
		}
		condemned := !p.wanted.Contains(ordinal)
		if !condemned && !Terminating(pod) {
			if err := c.createClaims(ctx, p, c.recipe(p, p.history.UpdateName()), ordinal, pod); err != nil {
				return err
			}
		}
		if c.ignoreClaimRetention {
			continue // the PVCs' owners are left as they are
		}
		for _, vct := range p.set.Spec.VolumeClaimTemplates {
			claim, err := c.claims.PersistentVolumeClaims(p.set.Namespace).Get(ClaimName(vct.Name, p.set.Name, ordinal))
			if err != nil {
				continue
			}
			refs, changed := ClaimOwners(claim, p.retention, p.set, setTypeMeta, pod, condemned)
			if !changed {
				continue
			}
			if err := c.patchClaimOwners(ctx, claim, refs); err != nil {
				return err
			}
		}
	}
	return nil
}

// createClaims creates the PVCs of ordinal that do not exist, with the owners the retention
// policy asks for (pod is the ordinal's pod, nil before it exists).
func (c *Controller) createClaims(ctx context.Context, p *pass, r PodRecipe, ordinal int, pod *corev1.Pod) error {
	for _, claim := range NewClaims(r, ordinal) {
		if _, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading PVC %s: %w", claim.Name, err)
		}
		claim.OwnerReferences, _ = ClaimOwners(claim, p.retention, p.set, setTypeMeta, pod, false)
		c.expect.Expect(p.key, expectations.Create, expectations.PersistentVolumeClaims, claim.Name)
		_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			c.expect.Observe(p.key, expectations.Create, expectations.PersistentVolumeClaims, claim.Name)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if namespaceTerminating(err) {
				return nil
			}
			c.recorder.Eventf(p.set, corev1.EventTypeWarning, ReasonFailedCreate, "create Claim %s for Pod %s in StatefulSet %s failed error: %v",
				claim.Name, PodName(p.set.Name, ordinal), p.set.Name, err)
			return fmt.Errorf("creating PVC %s: %w", claim.Name, err)
		}
		c.recorder.Eventf(p.set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Claim %s Pod %s in StatefulSet %s success",
			claim.Name, PodName(p.set.Name, ordinal), p.set.Name)
	}
	return nil
}

func (c *Controller) patchClaimOwners(ctx context.Context, claim *corev1.PersistentVolumeClaim, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "resourceVersion": claim.ResourceVersion}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting the owners of PVC %s: %w", claim.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Set PVC owners by the retention policy", "pvc", klog.KObj(claim), "owners", len(refs))
	return nil
}
