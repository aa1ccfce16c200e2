//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// The rollout benchmark's pod: one busybox container serving TCP on rolloutPort (busybox httpd),
// with a TCP readiness probe every second. A TCP probe is the kubelet dialling the pod's IP: an
// exec probe (`true`) would cost a runc exec per pod per second, on this 2-core machine about a
// core for 90 pods, and would slow every variant alike.
const (
	rolloutPort      = 8080
	rolloutContainer = "main"
	appLabel         = "app"
)

// rolloutPodSpec is the same for every variant and for the floor's bare pod.
func rolloutPodSpec(img string) corev1.PodSpec {
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
		Containers: []corev1.Container{{
			Name:    rolloutContainer,
			Image:   img,
			Command: []string{"sh", "-c", fmt.Sprintf(`trap "exit 0" TERM; httpd -f -p %d -h /tmp & wait`, rolloutPort)},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(rolloutPort)}},
				PeriodSeconds:    1,
				TimeoutSeconds:   1,
				SuccessThreshold: 1,
				FailureThreshold: 1,
			},
		}},
	}
}

func rolloutTemplate(app, img string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appLabel: app}},
		Spec:       rolloutPodSpec(img),
	}
}

// rolloutCloneSet is a v1alpha1 CloneSet with every field OpenKruise's defaulting webhook would
// set written out (it is not installed: OpenKruise's controller must find them set).
func rolloutCloneSet(ns, name, img string, replicas, maxUnavailable int32, typ appsv1alpha1.CloneSetUpdateStrategyType) *appsv1alpha1.CloneSet {
	s := appsv1alpha1.CloneSetUpdateStrategy{
		Type:           typ,
		Partition:      ptr.To(intstr.FromInt32(0)),
		MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
		MaxSurge:       ptr.To(intstr.FromInt32(0)),
	}
	if typ != appsv1alpha1.RecreateCloneSetUpdateStrategyType {
		s.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{}
	}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:             ptr.To(replicas),
			RevisionHistoryLimit: ptr.To[int32](10),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:             rolloutTemplate(name, img),
			UpdateStrategy:       s,
		},
	}
}

// rolloutDeployment is the Deployment counterpart: rolling update, maxUnavailable as given,
// maxSurge 0, so that it replaces pods in the same steps as the CloneSets.
func rolloutDeployment(ns, name, img string, replicas, maxUnavailable int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(replicas),
			RevisionHistoryLimit: ptr.To[int32](10),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:             rolloutTemplate(name, img),
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
					MaxSurge:       ptr.To(intstr.FromInt32(0)),
				},
			},
		},
	}
}

// imagePatch replaces the image of the first container of a pod spec at prefix.
func imagePatch(prefix, img string) []byte {
	p, _ := json.Marshal([]map[string]any{{"op": "replace", "path": prefix + "/containers/0/image", "value": img}})
	return p
}

// workload is what a rollout is measured on: a CloneSet or a Deployment of n pods labelled
// app=name.
type workload interface {
	name() string
	// setImage changes the template's image and returns the generation that carries it.
	setImage(ctx context.Context, img string) (int64, error)
	// watch watches the object.
	watch(ctx context.Context) (watch.Interface, error)
	// done says whether obj's status shows every pod updated, ready and available at the
	// template of generation gen; the string says what it shows, for timeouts.
	done(obj runtime.Object, gen int64) (bool, string)
}

type cloneSetWorkload struct {
	c      versioned.Interface
	ns, nm string
	n      int32
}

func (w cloneSetWorkload) name() string { return w.nm }

func (w cloneSetWorkload) setImage(ctx context.Context, img string) (int64, error) {
	cs, err := w.c.AppsV1alpha1().CloneSets(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of CloneSet %s: %w", w.nm, err)
	}
	return cs.Generation, nil
}

func (w cloneSetWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1alpha1().CloneSets(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w cloneSetWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	cs, ok := obj.(*appsv1alpha1.CloneSet)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	s, n := cs.Status, w.n
	return s.ObservedGeneration >= gen && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n &&
			s.AvailableReplicas == n && s.UpdatedReadyReplicas == n && s.CurrentRevision == s.UpdateRevision,
		fmt.Sprintf("generation %d, status %+v", cs.Generation, s)
}

type deploymentWorkload struct {
	c      kubernetes.Interface
	ns, nm string
	n      int32
}

func (w deploymentWorkload) name() string { return w.nm }

func (w deploymentWorkload) setImage(ctx context.Context, img string) (int64, error) {
	d, err := w.c.AppsV1().Deployments(w.ns).Patch(ctx, w.nm, types.JSONPatchType, imagePatch("/spec/template/spec", img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of Deployment %s: %w", w.nm, err)
	}
	return d.Generation, nil
}

func (w deploymentWorkload) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.AppsV1().Deployments(w.ns).Watch(ctx, nameSelector(w.nm))
}

func (w deploymentWorkload) done(obj runtime.Object, gen int64) (bool, string) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	s, n := d.Status, w.n
	return s.ObservedGeneration >= gen && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n &&
			s.AvailableReplicas == n && s.UnavailableReplicas == 0,
		fmt.Sprintf("generation %d, status %+v", d.Generation, s)
}
