package podbudget

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"

	kruiselisters "github.com/nodekruise/kruise/pkg/client/listers/apps/v1beta1"
)

// ScaleFunc reads spec.replicas through the scale subresource of a kind no lister serves;
// found is false when the object is gone or the kind has no scale subresource.
type ScaleFunc func(ctx context.Context, namespace string, gk schema.GroupKind, name string) (n int32, found bool, err error)

// Listers read workloads from caches: Owners and Replicas for the kinds kruise watches
// (ReplicaSets, Deployments, StatefulSets, CloneSets, Advanced StatefulSets), Scale for any other
// (ReplicationControllers, Argo Rollouts, ...). A nil lister knows nothing of its kind.
type Listers struct {
	ReplicaSets          appslisters.ReplicaSetLister
	Deployments          appslisters.DeploymentLister
	StatefulSets         appslisters.StatefulSetLister
	CloneSets            kruiselisters.CloneSetLister
	AdvancedStatefulSets kruiselisters.StatefulSetLister
	Scale                ScaleFunc
}

// object is what Listers read of a workload: its metadata and spec.replicas.
type object struct {
	meta     metav1.Object
	replicas *int32
}

// get reads the workload gk/name from its lister; ok is false when no lister serves the kind.
func (l Listers) get(namespace string, gk schema.GroupKind, name string) (obj *object, ok bool, err error) {
	switch {
	case gk == (schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}) && l.ReplicaSets != nil:
		o, err := l.ReplicaSets.ReplicaSets(namespace).Get(name)
		if err != nil {
			return nil, true, err
		}
		return &object{o, o.Spec.Replicas}, true, nil
	case gk == (schema.GroupKind{Group: "apps", Kind: "Deployment"}) && l.Deployments != nil:
		o, err := l.Deployments.Deployments(namespace).Get(name)
		if err != nil {
			return nil, true, err
		}
		return &object{o, o.Spec.Replicas}, true, nil
	case gk == (schema.GroupKind{Group: "apps", Kind: "StatefulSet"}) && l.StatefulSets != nil:
		o, err := l.StatefulSets.StatefulSets(namespace).Get(name)
		if err != nil {
			return nil, true, err
		}
		return &object{o, o.Spec.Replicas}, true, nil
	case gk == (schema.GroupKind{Group: "apps.kruise.io", Kind: "CloneSet"}) && l.CloneSets != nil:
		o, err := l.CloneSets.CloneSets(namespace).Get(name)
		if err != nil {
			return nil, true, err
		}
		return &object{o, o.Spec.Replicas}, true, nil
	case gk == (schema.GroupKind{Group: "apps.kruise.io", Kind: "StatefulSet"}) && l.AdvancedStatefulSets != nil:
		o, err := l.AdvancedStatefulSets.StatefulSets(namespace).Get(name)
		if err != nil {
			return nil, true, err
		}
		return &object{o, o.Spec.Replicas}, true, nil
	}
	return nil, false, nil
}

func groupKind(apiVersion, kind string) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}

// ControllerOf implements Owners for the kinds with a lister.
func (l Listers) ControllerOf(_ context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
	obj, ok, err := l.get(namespace, groupKind(ref.APIVersion, ref.Kind), ref.Name)
	switch {
	case apierrors.IsNotFound(err) || !ok:
		return nil, nil
	case err != nil:
		return nil, err
	case ref.UID != "" && obj.meta.GetUID() != ref.UID:
		// Another object of the same name: the one the pod names is gone.
		return nil, nil
	}
	if c := metav1.GetControllerOfNoCopy(obj.meta); c != nil {
		return c.DeepCopy(), nil
	}
	return nil, nil
}

// Replicas implements Replicas: spec.replicas (nil is 1, the API's default) of a workload a
// lister serves, else through Scale.
func (l Listers) Replicas(ctx context.Context, namespace string, w Workload) (int32, bool, error) {
	gk := groupKind(w.APIVersion, w.Kind)
	obj, ok, err := l.get(namespace, gk, w.Name)
	switch {
	case apierrors.IsNotFound(err):
		return 0, true, nil
	case err != nil:
		return 0, false, err
	case ok:
		if obj.meta.GetDeletionTimestamp() != nil {
			return 0, true, nil
		}
		if obj.replicas == nil {
			return 1, true, nil
		}
		return *obj.replicas, true, nil
	case l.Scale != nil:
		return l.Scale(ctx, namespace, gk, w.Name)
	}
	return 0, false, nil
}
