package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

// The built-in kinds are handed to kubectl's own rollout helpers
// (k8s.io/kubectl/pkg/polymorphichelpers), so they behave exactly as under
// `kubectl rollout`; this file only reads and writes the objects.

// getBuiltin reads a built-in workload, with its kind set for printing.
func getBuiltin(ctx context.Context, c *clients, t target) (runtime.Object, error) {
	apps := c.kube.AppsV1()
	var obj runtime.Object
	var err error
	switch t.kind.gvk.Kind {
	case "Deployment":
		obj, err = apps.Deployments(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
	case "StatefulSet":
		obj, err = apps.StatefulSets(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
	case "DaemonSet":
		obj, err = apps.DaemonSets(t.namespace).Get(ctx, t.name, metav1.GetOptions{})
	default:
		return nil, fmt.Errorf("%s is not a built-in workload", t.kind.gvk)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %q in namespace %q: %w", t.kind.display, t.name, t.namespace, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(t.kind.gvk)
	return obj, nil
}

// patchBuiltin patches a built-in workload.
func patchBuiltin(ctx context.Context, c *clients, t target, pt types.PatchType, data []byte) (runtime.Object, error) {
	apps := c.kube.AppsV1()
	var obj runtime.Object
	var err error
	switch t.kind.gvk.Kind {
	case "Deployment":
		obj, err = apps.Deployments(t.namespace).Patch(ctx, t.name, pt, data, metav1.PatchOptions{})
	case "StatefulSet":
		obj, err = apps.StatefulSets(t.namespace).Patch(ctx, t.name, pt, data, metav1.PatchOptions{})
	case "DaemonSet":
		obj, err = apps.DaemonSets(t.namespace).Patch(ctx, t.name, pt, data, metav1.PatchOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("patching %s %q in namespace %q: %w", t.kind.display, t.name, t.namespace, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(t.kind.gvk)
	return obj, nil
}

// builtinListWatch lists and watches one built-in workload by name.
func builtinListWatch(c *clients, t target) (cache.ListerWatcher, runtime.Object) {
	apps := c.kube.AppsV1()
	switch t.kind.gvk.Kind {
	case "Deployment":
		return oneObject(apps.Deployments(t.namespace), t.name), &appsv1.Deployment{}
	case "StatefulSet":
		return oneObject(apps.StatefulSets(t.namespace), t.name), &appsv1.StatefulSet{}
	default:
		return oneObject(apps.DaemonSets(t.namespace), t.name), &appsv1.DaemonSet{}
	}
}

// builtinStatus is kubectl's `rollout status`: kubectl's StatusViewer
// judges each version of the object; the message is printed every time.
func (d *deps) builtinStatus(ctx context.Context, c *clients, t target, o statusOptions) error {
	viewer, err := polymorphichelpers.StatusViewerFor(t.kind.gvk.GroupKind())
	if err != nil {
		return err
	}
	judge := func(obj runtime.Object) (bool, error) {
		fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return false, fmt.Errorf("reading %s %q: %w", t.kind.display, t.name, err)
		}
		status, done, err := viewer.Status(&unstructured.Unstructured{Object: fields}, o.revision)
		if err != nil {
			return false, err
		}
		fmt.Fprint(d.streams.Out, status)
		return done, nil
	}
	if !o.watch {
		obj, err := getBuiltin(ctx, c, t)
		if err != nil {
			return err
		}
		_, err = judge(obj)
		return err
	}
	lw, example := builtinListWatch(c, t)
	_, err = watchtools.UntilWithSync(ctx, lw, example, nil, func(e watch.Event) (bool, error) {
		switch e.Type {
		case watch.Added, watch.Modified:
			return judge(e.Object)
		case watch.Deleted:
			return false, fmt.Errorf("%s %q in namespace %q was deleted while its rollout was watched", t.kind.display, t.name, t.namespace)
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return timeoutError(ctx, t, o, nil)
	}
	return err
}

// builtinPatch computes the strategic merge patch from obj to what mutate
// (kubectl's ObjectPauser, ObjectResumer or ObjectRestarter) makes of it;
// an empty patch means nothing to change.
func builtinPatch(obj runtime.Object, mutate func(runtime.Object) ([]byte, error)) ([]byte, error) {
	before, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	after, err := mutate(obj.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, obj)
	if err != nil {
		return nil, fmt.Errorf("computing the patch: %w", err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	return patch, nil
}
