package describe

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// notFound is the error for a missing workload, saying how to list them.
func notFound(kind, resource, namespace, name string) error {
	return fmt.Errorf("%s %s/%s not found: list them with `kubectl get %s -n %s`", kind, namespace, name, resource, namespace)
}

func describeCloneSet(ctx context.Context, o *Options, name string) (string, error) {
	cs, err := o.Kruise.AppsV1beta1().CloneSets(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("cloneset", "clonesets.apps.kruise.io", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading cloneset %s/%s: %w", o.Namespace, name, err)
	}
	return o.describeWorkload(ctx, workload{
		kind: "CloneSet", meta: cs.ObjectMeta, selector: cs.Spec.Selector,
		currentRevision: cs.Status.CurrentRevision, updateRevision: cs.Status.UpdateRevision,
		details: func(p *page) {
			st := cs.Status
			p.line(0, "Replicas:\t%d desired | %d total | %d updated | %d ready | %d available | %d updated ready", deref(cs.Spec.Replicas, 1), st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReadyReplicas)
			u := cs.Spec.UpdateStrategy
			p.line(0, "Update Strategy:\t%s", orDefault(string(u.Type), "RollingUpdate"))
			if r := u.RollingUpdate; r != nil {
				p.line(1, "Pod Update Policy:\t%s", orDefault(string(r.PodUpdatePolicy), "ReCreate"))
				p.line(1, "Partition:\t%s", intOrString(r.Partition, "0"))
				p.line(1, "Max Unavailable:\t%s", intOrString(r.MaxUnavailable, "20%"))
				p.line(1, "Max Surge:\t%s", intOrString(r.MaxSurge, "0"))
				p.line(1, "Paused:\t%t", r.Paused)
			}
			for _, c := range st.Conditions {
				p.line(0, "Condition %s:\t%s %s %s", c.Type, c.Status, c.Reason, c.Message)
			}
		},
	})
}

func describeStatefulSet(ctx context.Context, o *Options, name string) (string, error) {
	sts, err := o.Kruise.AppsV1beta1().StatefulSets(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("statefulset", "statefulsets.apps.kruise.io", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading statefulset %s/%s: %w", o.Namespace, name, err)
	}
	return o.describeWorkload(ctx, workload{
		kind: "StatefulSet", meta: sts.ObjectMeta, selector: sts.Spec.Selector,
		currentRevision: sts.Status.CurrentRevision, updateRevision: sts.Status.UpdateRevision,
		details: func(p *page) {
			st := sts.Status
			p.line(0, "Replicas:\t%d desired | %d total | %d current | %d updated | %d ready | %d available", deref(sts.Spec.Replicas, 1), st.Replicas, st.CurrentReplicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
			u := sts.Spec.UpdateStrategy
			p.line(0, "Update Strategy:\t%s", orDefault(string(u.Type), "RollingUpdate"))
			if r := u.RollingUpdate; r != nil {
				p.line(1, "Pod Update Policy:\t%s", orDefault(string(r.PodUpdatePolicy), "ReCreate"))
				p.line(1, "Partition:\t%d", deref(r.Partition, 0))
				p.line(1, "Max Unavailable:\t%s", intOrString(r.MaxUnavailable, "1"))
				p.line(1, "Paused:\t%t", r.Paused)
			}
		},
	})
}

func describeDaemonSet(ctx context.Context, o *Options, name string) (string, error) {
	ds, err := o.Kruise.AppsV1beta1().DaemonSets(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", notFound("daemonset", "daemonsets.apps.kruise.io", o.Namespace, name)
	}
	if err != nil {
		return "", fmt.Errorf("reading daemonset %s/%s: %w", o.Namespace, name, err)
	}
	return o.describeWorkload(ctx, workload{
		kind: "DaemonSet", meta: ds.ObjectMeta, selector: ds.Spec.Selector,
		updateRevision: ds.Status.UpdateRevision,
		details: func(p *page) {
			st := ds.Status
			p.line(0, "Nodes:\t%d desired | %d scheduled | %d updated | %d ready | %d available | %d misscheduled", st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.UpdatedNumberScheduled, st.NumberReady, st.NumberAvailable, st.NumberMisscheduled)
			u := ds.Spec.UpdateStrategy
			p.line(0, "Update Strategy:\t%s", orDefault(string(u.Type), "RollingUpdate"))
			if r := u.RollingUpdate; r != nil {
				p.line(1, "Rolling Update Type:\t%s", orDefault(string(r.Type), "Standard"))
				p.line(1, "Partition:\t%s", intOrString(r.Partition, "0"))
				p.line(1, "Max Unavailable:\t%s", intOrString(r.MaxUnavailable, "1"))
				p.line(1, "Paused:\t%t", r.Paused != nil && *r.Paused)
			}
		},
	})
}

func deref(v *int32, unset int32) int32 {
	if v == nil {
		return unset
	}
	return *v
}

func orDefault(s, unset string) string {
	if s == "" {
		return unset
	}
	return s
}

func intOrString(v *intstr.IntOrString, unset string) string {
	if v == nil {
		return unset
	}
	return v.String()
}
