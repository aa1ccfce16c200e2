package migrate

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodeSelectorKey is the node label a migrated DaemonSet's pods are made
// to require: no node has it, so the DaemonSet runs no pods (a DaemonSet
// cannot be scaled to 0).
const NodeSelectorKey = "kubectl.kruise.io/migrated"

// plan is one migration: the source as read, and the workload to create.
type plan struct {
	kind     string // Deployment, StatefulSet, DaemonSet
	resource string // deployment.apps ...
	meta     metav1.ObjectMeta
	// replicas is how many pods the source wants (a DaemonSet: how many
	// nodes it runs on), minUnavailable how many of them may be
	// unavailable during an update of it.
	replicas       int32
	maxUnavailable *intstr.IntOrString
	target         runtime.Object
	targetKind     string // CloneSet ...
	targetResource string // cloneset.apps.kruise.io ...
	targetName     string
	warnings       []string
}

// readSource reads kind/name and plans its migration.
func (o *Options) readSource(ctx context.Context) (*plan, error) {
	apps := o.Kube.AppsV1()
	switch o.Kind {
	case "deployment":
		d, err := apps.Deployments(o.Namespace).Get(ctx, o.Source, metav1.GetOptions{})
		if err != nil {
			return nil, sourceError("deployment", o.Namespace, o.Source, err)
		}
		name := o.nameOr(d.Name)
		p := &plan{kind: "Deployment", resource: "deployment.apps", meta: d.ObjectMeta, replicas: *replicas(d.Spec.Replicas),
			target: cloneSetFrom(d, name), targetKind: "CloneSet", targetResource: "cloneset.apps.kruise.io", targetName: name}
		if d.Spec.Strategy.RollingUpdate != nil {
			p.maxUnavailable = d.Spec.Strategy.RollingUpdate.MaxUnavailable
		}
		return p, nil
	case "statefulset":
		s, err := apps.StatefulSets(o.Namespace).Get(ctx, o.Source, metav1.GetOptions{})
		if err != nil {
			return nil, sourceError("statefulset", o.Namespace, o.Source, err)
		}
		name := o.nameOr(s.Name + "-asts")
		p := &plan{kind: "StatefulSet", resource: "statefulset.apps", meta: s.ObjectMeta, replicas: *replicas(s.Spec.Replicas),
			target: statefulSetFrom(s, name), targetKind: "StatefulSet", targetResource: "statefulset.apps.kruise.io", targetName: name}
		if name == s.Name {
			return nil, fmt.Errorf("the Advanced StatefulSet cannot be named %s like statefulset %s/%s: both would create pods %s-0, %s-1, ...; choose another --name, or take the pods over instead (docs/statefulset.md, Migrating from the built-in StatefulSet)", name, s.Namespace, s.Name, name, name)
		}
		if len(s.Spec.VolumeClaimTemplates) > 0 && !o.NewVolumes {
			return nil, fmt.Errorf("statefulset %s/%s has volumeClaimTemplates: the Advanced StatefulSet %s would get new, empty volumes, and the data would stay with the old pods' claims; to keep the data, take the pods over instead (docs/statefulset.md, Migrating from the built-in StatefulSet), or pass --new-volumes if new volumes are what you want", s.Namespace, s.Name, name)
		}
		if r := s.Spec.UpdateStrategy.RollingUpdate; r != nil {
			p.maxUnavailable = r.MaxUnavailable
		}
		return p, nil
	case "daemonset":
		d, err := apps.DaemonSets(o.Namespace).Get(ctx, o.Source, metav1.GetOptions{})
		if err != nil {
			return nil, sourceError("daemonset", o.Namespace, o.Source, err)
		}
		name := o.nameOr(d.Name)
		p := &plan{kind: "DaemonSet", resource: "daemonset.apps", meta: d.ObjectMeta, replicas: d.Status.DesiredNumberScheduled,
			target: daemonSetFrom(d, name), targetKind: "DaemonSet", targetResource: "daemonset.apps.kruise.io", targetName: name}
		if r := d.Spec.UpdateStrategy.RollingUpdate; r != nil {
			p.maxUnavailable = r.MaxUnavailable
		}
		if ports := hostPorts(d.Spec.Template.Spec.Containers); len(ports) > 0 {
			p.warnings = append(p.warnings, fmt.Sprintf("daemonset %s/%s uses host ports (%s): the Advanced DaemonSet's pods cannot start on a node while the old pod holds them, so the migration will time out and leave the DaemonSet as it is", d.Namespace, d.Name, strings.Join(ports, ", ")))
		}
		return p, nil
	}
	return nil, fmt.Errorf("cannot migrate a %s", o.Kind)
}

func (o *Options) nameOr(name string) string {
	if o.Name != "" {
		return o.Name
	}
	return name
}

func sourceError(kind, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s not found: check its name and the namespace (-n)", kind, namespace, name)
	}
	return fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
}

// scaleDown makes the source run no pods, keeping it: replicas 0, or for
// a DaemonSet a node selector no node matches.
func (o *Options) scaleDown(ctx context.Context, p *plan) error {
	apps := o.Kube.AppsV1()
	var err error
	switch p.kind {
	case "Deployment":
		_, err = apps.Deployments(o.Namespace).Patch(ctx, p.meta.Name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	case "StatefulSet":
		_, err = apps.StatefulSets(o.Namespace).Patch(ctx, p.meta.Name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	case "DaemonSet":
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:"true"}}}}}`, NodeSelectorKey)
		_, err = apps.DaemonSets(o.Namespace).Patch(ctx, p.meta.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("scaling %s %s/%s down (the %s runs all the pods now; scale it down by hand): %w", strings.ToLower(p.kind), o.Namespace, p.meta.Name, p.targetKind, err)
	}
	return nil
}
