package migrate

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// targets reads, creates and watches the workload a migration creates,
// whichever of the three kinds it is.
type targets struct {
	create func(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error)
	get    func(ctx context.Context, name string) (runtime.Object, error)
	watch  func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func (o *Options) targets(kind string) targets {
	apps := o.Kruise.AppsV1beta1()
	switch kind {
	case "CloneSet":
		c := apps.CloneSets(o.Namespace)
		return targets{
			create: func(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
				return c.Create(ctx, obj.(*appsv1beta1.CloneSet), opts)
			},
			get: func(ctx context.Context, name string) (runtime.Object, error) {
				return c.Get(ctx, name, metav1.GetOptions{})
			},
			watch: c.Watch,
		}
	case "StatefulSet":
		c := apps.StatefulSets(o.Namespace)
		return targets{
			create: func(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
				return c.Create(ctx, obj.(*appsv1beta1.StatefulSet), opts)
			},
			get: func(ctx context.Context, name string) (runtime.Object, error) {
				return c.Get(ctx, name, metav1.GetOptions{})
			},
			watch: c.Watch,
		}
	default:
		c := apps.DaemonSets(o.Namespace)
		return targets{
			create: func(ctx context.Context, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
				return c.Create(ctx, obj.(*appsv1beta1.DaemonSet), opts)
			},
			get: func(ctx context.Context, name string) (runtime.Object, error) {
				return c.Get(ctx, name, metav1.GetOptions{})
			},
			watch: c.Watch,
		}
	}
}

// readiness says whether the workload runs all its pods ready and
// available, for the spec the controller has seen, and how far it is.
func readiness(obj runtime.Object) (bool, string) {
	switch w := obj.(type) {
	case *appsv1beta1.CloneSet:
		want := *replicas(w.Spec.Replicas)
		s := w.Status
		return s.ObservedGeneration >= w.Generation && s.ReadyReplicas >= want && s.AvailableReplicas >= want && s.UpdatedReplicas >= want,
			fmt.Sprintf("%d/%d ready, %d/%d available", s.ReadyReplicas, want, s.AvailableReplicas, want)
	case *appsv1beta1.StatefulSet:
		want := *replicas(w.Spec.Replicas)
		s := w.Status
		return s.ObservedGeneration >= w.Generation && s.ReadyReplicas >= want && s.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d ready, %d/%d available", s.ReadyReplicas, want, s.AvailableReplicas, want)
	case *appsv1beta1.DaemonSet:
		s := w.Status
		return s.ObservedGeneration >= w.Generation && s.ObservedGeneration > 0 && s.NumberReady >= s.DesiredNumberScheduled && s.NumberAvailable >= s.DesiredNumberScheduled,
			fmt.Sprintf("%d/%d nodes ready, %d/%d available", s.NumberReady, s.DesiredNumberScheduled, s.NumberAvailable, s.DesiredNumberScheduled)
	}
	return false, "unknown kind"
}

// waitReady follows the workload until it is ready, printing its
// progress when it changes. A closed watch is reopened after a fresh read.
func (o *Options) waitReady(ctx context.Context, t targets, p *plan, current runtime.Object) error {
	last := ""
	step := func(obj runtime.Object) bool {
		ready, progress := readiness(obj)
		if progress != last {
			last = progress
			fmt.Fprintf(o.Out, "%s/%s: %s\n", p.targetResource, p.targetName, progress)
		}
		return ready
	}
	for {
		if step(current) {
			return nil
		}
		m, err := metaOf(current)
		if err != nil {
			return err
		}
		w, err := t.watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.targetName).String(), ResourceVersion: m.GetResourceVersion()})
		if err != nil {
			return fmt.Errorf("watching %s %s/%s: %w", p.targetResource, o.Namespace, p.targetName, err)
		}
		done, err := drain(ctx, w, step)
		w.Stop()
		if done || err != nil {
			return err
		}
		if current, err = t.get(ctx, p.targetName); err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", p.targetResource, o.Namespace, p.targetName, err)
		}
	}
}

// drain feeds step with the watch's objects until it is done; neither
// done nor an error means the watch ended and is to be reopened.
func drain(ctx context.Context, w watch.Interface, step func(runtime.Object) bool) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				return false, nil
			case watch.Deleted:
				return false, fmt.Errorf("the new workload was deleted while the migration waited for it")
			case watch.Added, watch.Modified:
				if step(ev.Object) {
					return true, nil
				}
			}
		}
	}
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m, nil
}
