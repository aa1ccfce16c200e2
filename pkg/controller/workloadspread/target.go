package workloadspread

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/spread"
)

// deploymentRevision is the annotation the Deployment controller numbers its ReplicaSets with.
const deploymentRevision = "deployment.kubernetes.io/revision"

// errUnsupported: the target's kind is neither one kruise watches nor one with a scale
// subresource kruise may read.
var errUnsupported = errors.New("unsupported target kind")

// target is what a reconcile reads of the workload: nil when it does not exist; latest is the
// hash of its current template's pods ("" unknown or not versioned).
type target struct {
	workload *spread.Workload
	latest   string
}

// readTarget reads ws's target from the caches, or for other kinds through its scale subresource
// (its replicas; its pods are then all those it controls).
func (c *Controller) readTarget(ctx context.Context, ws *appsv1alpha1.WorkloadSpread) (target, error) {
	ref := *ws.Spec.TargetReference
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return target{}, fmt.Errorf("%w: apiVersion %q: %v", errUnsupported, ref.APIVersion, err)
	}
	ns, name := ws.Namespace, ref.Name
	var obj runtime.Object
	var latest string
	switch gk := (schema.GroupKind{Group: gv.Group, Kind: ref.Kind}); {
	case gk == schema.GroupKind{Group: "apps", Kind: "Deployment"} && c.deployments != nil:
		d, err := c.deployments.Deployments(ns).Get(name)
		if err == nil {
			latest = c.newestReplicaSetHash(d)
		}
		obj, err = typed(d, err)
		if err != nil {
			return target{}, err
		}
	case gk == schema.GroupKind{Group: "apps", Kind: "ReplicaSet"} && c.replicaSets != nil:
		rs, err := c.replicaSets.ReplicaSets(ns).Get(name)
		if err == nil {
			latest = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
		if obj, err = typed(rs, err); err != nil {
			return target{}, err
		}
	case gk == schema.GroupKind{Group: "apps", Kind: "StatefulSet"} && c.statefulSets != nil:
		if obj, err = typed(c.statefulSets.StatefulSets(ns).Get(name)); err != nil {
			return target{}, err
		}
	case gk == schema.GroupKind{Group: "batch", Kind: "Job"} && c.jobs != nil:
		if obj, err = typed(c.jobs.Jobs(ns).Get(name)); err != nil {
			return target{}, err
		}
	case gk == schema.GroupKind{Group: appsv1alpha1.GroupName, Kind: "CloneSet"} && c.cloneSets != nil:
		cs, err := c.cloneSets.CloneSets(ns).Get(name)
		if err == nil {
			latest = cs.Status.UpdateRevision
		}
		if obj, err = typed(cs, err); err != nil {
			return target{}, err
		}
	case gk == schema.GroupKind{Group: appsv1alpha1.GroupName, Kind: "StatefulSet"} && c.advancedSets != nil:
		if obj, err = typed(c.advancedSets.StatefulSets(ns).Get(name)); err != nil {
			return target{}, err
		}
	default:
		return c.readScale(ctx, ws, gk)
	}
	if obj == nil {
		return target{}, nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return target{}, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, name, err)
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	w, err := spread.WorkloadOf(u, ws.Spec.TargetFilter)
	if err != nil {
		return target{}, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, name, err)
	}
	return target{workload: w, latest: spread.LatestVersion(ref, latest)}, nil
}

// typed turns a lister's answer into an object, nil when it is not found.
func typed[T runtime.Object](obj T, err error) (runtime.Object, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// readScale reads a target of another kind through its scale subresource.
func (c *Controller) readScale(ctx context.Context, ws *appsv1alpha1.WorkloadSpread, gk schema.GroupKind) (target, error) {
	if c.scale == nil {
		return target{}, fmt.Errorf("%w: %s", errUnsupported, gk)
	}
	n, found, err := c.scale(ctx, ws.Namespace, gk, ws.Spec.TargetReference.Name)
	if err != nil {
		return target{}, err
	}
	if !found {
		return target{}, fmt.Errorf("%w: %s has no scale subresource kruise may read", errUnsupported, gk)
	}
	// A scale read of an object that is gone answers 0 replicas: its pods are then surplus.
	return target{workload: &spread.Workload{Ref: *ws.Spec.TargetReference, Replicas: n, Selector: labels.Everything()}}, nil
}

// newestReplicaSetHash is the pod-template-hash of the Deployment's ReplicaSet with the highest
// revision: the pods of its current template.
func (c *Controller) newestReplicaSetHash(d *appsv1.Deployment) string {
	if c.replicaSets == nil {
		return ""
	}
	sets, err := c.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return ""
	}
	best, hash := int64(-1), ""
	for _, rs := range sets {
		if o := metav1.GetControllerOfNoCopy(rs); o == nil || o.UID != d.UID {
			continue
		}
		rev, err := strconv.ParseInt(rs.Annotations[deploymentRevision], 10, 64)
		if err != nil {
			continue
		}
		if rev > best {
			best, hash = rev, rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	return hash
}
