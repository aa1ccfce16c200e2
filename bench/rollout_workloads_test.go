//go:build bench

package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
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

// The rollout benchmarks' pod: a busybox container serving TCP on rolloutPort (busybox httpd),
// with a TCP readiness probe every second (tcpReadiness), and in the production shape more
// (podShape).
const (
	rolloutPort      = 8080
	rolloutContainer = "main"
	appLabel         = "app"
)

// rolloutPodSpec is the minimal shape's pod spec, the same for every variant and for the floor's
// bare pod.
func rolloutPodSpec(img string) corev1.PodSpec { return shapeMinimal.podSpec(img) }

// podShape is the pod a rollout benchmark rolls out: the same for every variant of a run and for
// the floor's bare pods; only the main container's image (containers[0], rolloutContainer)
// changes.
type podShape string

const (
	// shapeMinimal: the main container alone. A new pod costs this node little (image on the
	// node, no scheduling wait, no volume, no init work).
	shapeMinimal podShape = "minimal"
	// shapeProduction adds what a real pod carries and an update in place skips: an init
	// container that works 3 s, a native sidecar (an init container with restartPolicy Always,
	// as Istio injects its proxy by default since 1.27) Ready 2 s after it starts, and a
	// volume on a claim of its own (a generic ephemeral volume of the default StorageClass, so
	// that every variant's pod gets a claim provisioned when it is created and an update in
	// place keeps it).
	shapeProduction podShape = "production"
)

// The production shape's parts.
const (
	initWorkSeconds    = 3
	sidecarReadyAfter  = 2
	sidecarPort        = 8081
	dataVolume         = "data"
	dataMountPath      = "/data"
	dataVolumeCapacity = "64Mi"
)

func parsePodShape(s string) (podShape, error) {
	switch sh := podShape(s); sh {
	case shapeMinimal, shapeProduction:
		return sh, nil
	}
	return "", fmt.Errorf("pod shape %q: want %s or %s", s, shapeMinimal, shapeProduction)
}

// tcpReadiness is the readiness probe of every probed container here: a TCP dial of port every
// second. A TCP probe is the kubelet dialling the pod's IP: an exec probe (`true`) would cost a
// runc exec per pod per second, on this 2-core machine about a core for 90 pods, and would slow
// every variant alike.
func tcpReadiness(port int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		FailureThreshold: 1,
	}
}

// serve is a busybox command that serves TCP on port after sleeping delay seconds, and exits 0
// on SIGTERM.
func serve(port int32, delay int) []string {
	sleep := ""
	if delay > 0 {
		sleep = fmt.Sprintf("sleep %d; ", delay)
	}
	return []string{"sh", "-c", fmt.Sprintf(`trap "exit 0" TERM; %shttpd -f -p %d -h /tmp & wait`, sleep, port)}
}

func (s podShape) podSpec(img string) corev1.PodSpec {
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](graceSeconds),
		Containers: []corev1.Container{{
			Name:           rolloutContainer,
			Image:          img,
			Command:        serve(rolloutPort, 0),
			ReadinessProbe: tcpReadiness(rolloutPort),
		}},
	}
	if s != shapeProduction {
		return spec
	}
	mount := []corev1.VolumeMount{{Name: dataVolume, MountPath: dataMountPath}}
	spec.Containers[0].VolumeMounts = mount
	// The init container and the sidecar keep the base image: the rollout changes the main
	// container's alone.
	spec.InitContainers = []corev1.Container{{
		Name:         "init",
		Image:        image,
		Command:      []string{"sh", "-c", fmt.Sprintf("sleep %d && date > %s/initialised", initWorkSeconds, dataMountPath)},
		VolumeMounts: mount,
	}, {
		Name:           "sidecar",
		Image:          image,
		RestartPolicy:  ptr.To(corev1.ContainerRestartPolicyAlways),
		Command:        serve(sidecarPort, sidecarReadyAfter),
		ReadinessProbe: tcpReadiness(sidecarPort),
		VolumeMounts:   mount,
	}}
	spec.Volumes = []corev1.Volume{{
		Name: dataVolume,
		VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse(dataVolumeCapacity),
				}},
			}},
		}},
	}}
	return spec
}

func (s podShape) template(app, img string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appLabel: app}},
		Spec:       s.podSpec(img),
	}
}

func rolloutTemplate(app, img string) corev1.PodTemplateSpec { return shapeMinimal.template(app, img) }

// rolloutCloneSet is a v1alpha1 CloneSet with every field OpenKruise's defaulting webhook would
// set written out (it is not installed: OpenKruise's controller must find them set).
func rolloutCloneSet(ns, name string, shape podShape, img string, replicas, maxUnavailable int32, typ appsv1alpha1.CloneSetUpdateStrategyType) *appsv1alpha1.CloneSet {
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
			Template:             shape.template(name, img),
			UpdateStrategy:       s,
		},
	}
}

// rolloutDeployment is the Deployment counterpart: rolling update, maxUnavailable as given,
// maxSurge 0, so that it replaces pods in the same steps as the CloneSets.
func rolloutDeployment(ns, name string, shape podShape, img string, replicas, maxUnavailable int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(replicas),
			RevisionHistoryLimit: ptr.To[int32](10),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{appLabel: name}},
			Template:             shape.template(name, img),
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

// workload is what a rollout is measured on: a workload of n pods labelled app=name.
type workload interface {
	name() string
	// container names the pods' container whose image setImage changes.
	container() string
	// setImage changes the template's image and returns the generation that carries it.
	setImage(ctx context.Context, img string) (int64, error)
	// watch watches the object.
	watch(ctx context.Context) (watch.Interface, error)
	// done says whether obj's status shows every pod updated, ready and available at the
	// template of generation gen; the string says what it shows, for timeouts.
	done(obj runtime.Object, gen int64) (bool, string)
	// orphan deletes the workload and leaves its pods running (the garbage collector takes
	// its owner reference off them); remove deletes it with its pods (gone already is fine);
	// exists reads it, NotFound once it is gone.
	orphan(ctx context.Context) error
	remove(ctx context.Context) error
	exists(ctx context.Context) error
}

// object is a workload's API type, a pointer to it.
type object interface {
	runtime.Object
	GetGeneration() int64
}

// typedClient is the part of a typed client (CloneSets(ns), Deployments(ns), ...) a workload
// uses.
type typedClient[T object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// apiWorkload is a workload of kind, reached through its typed client; settled reads whether its
// status shows n pods updated, ready and available.
type apiWorkload[T object] struct {
	kind    string
	c       typedClient[T]
	nm      string
	n       int32
	settled func(obj T, n int32) bool
	status  func(obj T) any
	// podSpec is the JSON pointer to the object's pod spec (or list of containers' parent),
	// "/spec/template/spec" when empty; ctr the container changed, rolloutContainer when empty.
	// setImage changes the first container there.
	podSpec, ctr string
}

func (w apiWorkload[T]) name() string { return w.nm }

func (w apiWorkload[T]) container() string { return cmp.Or(w.ctr, rolloutContainer) }

func (w apiWorkload[T]) setImage(ctx context.Context, img string) (int64, error) {
	obj, err := w.c.Patch(ctx, w.nm, types.JSONPatchType, imagePatch(cmp.Or(w.podSpec, "/spec/template/spec"), img), metav1.PatchOptions{})
	if err != nil {
		return 0, fmt.Errorf("patching the image of %s %s: %w", w.kind, w.nm, err)
	}
	return obj.GetGeneration(), nil
}

func (w apiWorkload[T]) watch(ctx context.Context) (watch.Interface, error) {
	return w.c.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", w.nm).String()})
}

func (w apiWorkload[T]) done(obj runtime.Object, gen int64) (bool, string) {
	o, ok := obj.(T)
	if !ok {
		return false, fmt.Sprintf("unexpected %T", obj)
	}
	return o.GetGeneration() >= gen && w.settled(o, w.n), fmt.Sprintf("generation %d, status %+v", o.GetGeneration(), w.status(o))
}

func (w apiWorkload[T]) orphan(ctx context.Context) error {
	return w.c.Delete(ctx, w.nm, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
}

func (w apiWorkload[T]) remove(ctx context.Context) error {
	err := w.c.Delete(ctx, w.nm, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", w.kind, w.nm, err)
	}
	return nil
}

func (w apiWorkload[T]) exists(ctx context.Context) error {
	_, err := w.c.Get(ctx, w.nm, metav1.GetOptions{})
	return err
}

func cloneSetWorkload(c versioned.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1alpha1.CloneSet]{kind: "CloneSet", c: c.AppsV1alpha1().CloneSets(ns), nm: name, n: n,
		settled: func(cs *appsv1alpha1.CloneSet, n int32) bool {
			s := cs.Status
			return s.ObservedGeneration >= cs.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n &&
				s.AvailableReplicas == n && s.UpdatedReadyReplicas == n && s.CurrentRevision == s.UpdateRevision
		},
		status: func(cs *appsv1alpha1.CloneSet) any { return cs.Status }}
}

func deploymentWorkload(c kubernetes.Interface, ns, name string, n int32) workload {
	return apiWorkload[*appsv1.Deployment]{kind: "Deployment", c: c.AppsV1().Deployments(ns), nm: name, n: n,
		settled: func(d *appsv1.Deployment, n int32) bool {
			s := d.Status
			return s.ObservedGeneration >= d.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n &&
				s.AvailableReplicas == n && s.UnavailableReplicas == 0
		},
		status: func(d *appsv1.Deployment) any { return d.Status }}
}
