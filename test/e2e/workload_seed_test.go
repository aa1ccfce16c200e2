//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// OpenKruise v1.1's StatefulSetAutoDeletePVC seed, both policies Delete: scaling in from two pods
// to one deletes the claim of the pod scaled away and keeps the other; deleting the StatefulSet
// deletes the rest.
func TestStatefulSetSeedPVCRetention(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "seed-asts-pvc")
	// The seed names no storage class: its claims get the local cluster's default one.
	seedApply(ctx, t, f, ns, "openkruise-1.1-asts-pvc-retention.yaml", map[string]string{"app-image:v1": f.Image(seedPause)})
	sts := f.Dynamic(t).Resource(schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "statefulsets"}).Namespace(ns)
	readyPods(ctx, t, f, ns, "sample", 2)
	claims := f.Client.CoreV1().PersistentVolumeClaims(ns)
	for _, name := range []string{"data-sample-0", "data-sample-1"} {
		framework.WaitFor(ctx, t, time.Minute, "PVC "+name+" bound", func(ctx context.Context) (bool, string, error) {
			pvc, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return pvc.Status.Phase == "Bound", fmt.Sprintf("phase %s", pvc.Status.Phase), nil
		})
	}

	if _, err := sts.Patch(ctx, "sample", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling in: %v", err)
	}
	readyPods(ctx, t, f, ns, "sample", 1)
	waitClaimGone(ctx, t, f, ns, "data-sample-1")
	if _, err := claims.Get(ctx, "data-sample-0", metav1.GetOptions{}); err != nil {
		t.Errorf("the claim of the pod kept: %v", err)
	}

	if err := sts.Delete(ctx, "sample", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatalf("deleting the StatefulSet: %v", err)
	}
	waitClaimGone(ctx, t, f, ns, "data-sample-0")
}

func waitClaimGone(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	framework.WaitFor(ctx, t, 2*time.Minute, "PVC "+name+" deleted", func(ctx context.Context) (bool, string, error) {
		pvc, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("still there (deleting: %t, owners %v)", pvc.DeletionTimestamp != nil, pvc.OwnerReferences), nil
	})
}

// OpenKruise v1.1's Advanced DaemonSet preDelete seed, as the post writes it (v1alpha1): a pod
// carrying the hook's label is not deleted by a recreating update but waits in PreparingDelete;
// once the label is removed it is replaced by a pod at the new image.
func TestDaemonSetSeedPreDelete(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "seed-ads-predelete")
	seedApply(ctx, t, f, ns, "openkruise-1.1-ads-predelete.yaml", map[string]string{"app-image:v1": f.Image(seedPause)})
	pod := readyPods(ctx, t, f, ns, "sample", 1)[0]
	const hook = "example.io/block-deleting"
	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, hook)), metav1.PatchOptions{}); err != nil {
		t.Fatalf("putting the hook's label on pod %s: %v", pod.Name, err)
	}

	v2 := f.Variant(t, seedPause, 256)
	ads := f.Dynamic(t).Resource(schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "daemonsets"}).Namespace(ns)
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, v2)
	if _, err := ads.Patch(ctx, "sample", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating the image: %v", err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "pod "+pod.Name+" PreparingDelete", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return lifecycleState(p) == pub.LifecycleStatePreparingDelete, fmt.Sprintf("state %q", lifecycleState(p)), nil
	})
	framework.Consistently(ctx, t, 3*time.Second, "the hooked pod not deleted", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.DeletionTimestamp == nil, fmt.Sprintf("deletionTimestamp %v", p.DeletionTimestamp), nil
	})

	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, hook)), metav1.PatchOptions{}); err != nil {
		t.Fatalf("taking the hook's label off pod %s: %v", pod.Name, err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "a new pod at the new image, the hooked one gone", func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=sample"})
		if err != nil {
			return false, "", err
		}
		if len(l.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(l.Items)), nil
		}
		p := &l.Items[0]
		return p.UID != pod.UID && p.Spec.Containers[0].Image == v2 && framework.PodReady(p),
			fmt.Sprintf("pod %s image %s ready %t", p.Name, p.Spec.Containers[0].Image, framework.PodReady(p)), nil
	})
}
