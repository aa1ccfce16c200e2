//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/conversion"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const nodeImageCRD = "nodeimages.apps.kruise.io"

// waitConversionWebhook waits until kruise has switched NodeImage's CRD to its conversion webhook
// with the CA of Secret kruise-webhook-certs, and a read of the version not stored goes through it.
func waitConversionWebhook(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface) {
	t.Helper()
	crds, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "kruise switched "+nodeImageCRD+" to its conversion webhook", func(ctx context.Context) (bool, string, error) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil ||
			conv.Webhook.ClientConfig.Service == nil {
			return false, fmt.Sprintf("spec.conversion %+v", conv), nil
		}
		svc := conv.Webhook.ClientConfig.Service
		if svc.Namespace != framework.KruiseNamespace || svc.Name != certs.ServiceName || ptr.Deref(svc.Path, "") != conversion.Path ||
			ptr.Deref(svc.Port, 0) != 443 {
			return false, fmt.Sprintf("service %s/%s:%d%s", svc.Namespace, svc.Name, ptr.Deref(svc.Port, 0), ptr.Deref(svc.Path, "")), nil
		}
		secret, err := f.Client.CoreV1().Secrets(framework.KruiseNamespace).Get(ctx, certs.SecretName, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if !bytes.Equal(conv.Webhook.ClientConfig.CABundle, secret.Data[certs.CACertKey]) {
			return false, "caBundle is not the Secret's " + certs.CACertKey, nil
		}
		return true, "", nil
	})
	framework.WaitFor(ctx, t, 2*time.Minute, "a v1alpha1 list of NodeImages converted", func(ctx context.Context) (bool, string, error) {
		if _, err := kc.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// The bug: under strategy None a full v1alpha1 update of a NodeImage dropped
// pullSecrets[].mode (v1beta1-only). With kruise's conversion webhook, which kruise switches the
// CRD to itself, the mode survives a v1alpha1 read-modify-write, and a v1alpha1 reader sees it kept
// in the annotation apps.kruise.io/v1beta1-pull-secret-modes. The NodeImage is for a node that does
// not exist, labelled apps.kruise.io/fake-nodeimage so that the NodeImage controller leaves it be;
// no daemon watches it.
func TestConversionKeepsPullSecretModeOnV1alpha1Writes(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	kc := f.KruiseClient(t)
	waitConversionWebhook(ctx, t, f, kc)

	name := "e2e-conversion-" + rand.String(5)
	const image = "registry.example/conversion"
	ni := &appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1beta1.FakeNodeImageLabel: "true"}},
		Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{image: {
			PullSecrets: []appsv1beta1.ReferenceObject{
				{Namespace: "kruise-daemon-config", Name: "batch-copy", Mode: appsv1beta1.ReferenceObjectModeBatch},
				{Namespace: "kruise-daemon-config", Name: "per-job-copy"},
			},
			Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", Version: 1}},
		}}},
	}
	if _, err := kc.AppsV1beta1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating NodeImage %s as v1beta1: %v", name, err)
	}
	t.Cleanup(func() {
		if err := kc.AppsV1beta1().NodeImages().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting NodeImage %s: %v", name, err)
		}
	})

	alpha, err := kc.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading NodeImage %s as v1alpha1: %v", name, err)
	}
	if _, ok := alpha.Annotations[appsv1alpha1.PullSecretModesAnnotation]; !ok {
		t.Errorf("v1alpha1 read of %s has no %s annotation (converted by strategy None?): %v", name, appsv1alpha1.PullSecretModesAnnotation, alpha.Annotations)
	}
	// A full update through v1alpha1, as an OpenKruise v1alpha1 client does.
	if alpha.Labels == nil {
		alpha.Labels = map[string]string{}
	}
	alpha.Labels["kruise.e2e/touched-by"] = "v1alpha1"
	img := alpha.Spec.Images[image]
	img.Tags = append(img.Tags, appsv1alpha1.ImageTagSpec{Tag: "v2", Version: 1})
	alpha.Spec.Images[image] = img
	if _, err := kc.AppsV1alpha1().NodeImages().Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating NodeImage %s as v1alpha1: %v", name, err)
	}

	beta, err := kc.AppsV1beta1().NodeImages().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading NodeImage %s as v1beta1: %v", name, err)
	}
	got := beta.Spec.Images[image]
	var modes []string
	for _, s := range got.PullSecrets {
		modes = append(modes, s.Name+"="+s.Mode)
	}
	if want := "batch-copy=batch, per-job-copy="; strings.Join(modes, ", ") != want {
		t.Errorf("pullSecrets modes after a v1alpha1 update: %s, want %s", strings.Join(modes, ", "), want)
	}
	if len(got.Tags) != 2 || beta.Labels["kruise.e2e/touched-by"] != "v1alpha1" {
		t.Errorf("the v1alpha1 update was not applied: tags %v, labels %v", got.Tags, beta.Labels)
	}
	if _, ok := beta.Annotations[appsv1alpha1.PullSecretModesAnnotation]; ok {
		t.Errorf("v1beta1 object keeps the v1alpha1 helper annotation %s", appsv1alpha1.PullSecretModesAnnotation)
	}
}

// Every kind /convert converts round-trips through the API server: an object written in one
// version reads in the other exactly as the Go conversion of it, and back.
func TestConversionRoundTripsEveryKind(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	kc := f.KruiseClient(t)
	waitConversionWebhook(ctx, t, f, kc)
	ns := f.NewNamespace(ctx, t, "conversion")
	suffix := rand.String(5)

	checks := map[string]func(t *testing.T){
		"NodeImage": func(t *testing.T) {
			name := "e2e-conversion-rt-" + suffix
			ni := &appsv1alpha1.NodeImage{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1beta1.FakeNodeImageLabel: "true"}},
				Spec: appsv1alpha1.NodeImageSpec{Images: map[string]appsv1alpha1.ImageSpec{"registry.example/rt": {
					PullSecrets:   []appsv1alpha1.ReferenceObject{{Namespace: "kruise-daemon-config", Name: "s"}},
					SandboxConfig: &appsv1alpha1.SandboxConfig{Labels: map[string]string{"x": "y"}},
					Tags:          []appsv1alpha1.ImageTagSpec{{Tag: "v1", Version: 3}},
				}}},
			}
			if _, err := kc.AppsV1alpha1().NodeImages().Create(ctx, ni, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = kc.AppsV1alpha1().NodeImages().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
			})
			roundTrip(ctx, t, "NodeImage "+name,
				func(ctx context.Context) (*appsv1alpha1.NodeImage, error) {
					return kc.AppsV1alpha1().NodeImages().Get(ctx, name, metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.NodeImage, error) {
					return kc.AppsV1beta1().NodeImages().Get(ctx, name, metav1.GetOptions{})
				},
				appsv1alpha1.NodeImageToV1beta1, appsv1alpha1.NodeImageFromV1beta1)
		},
		"ImagePullJob": func(t *testing.T) {
			job := &appsv1beta1.ImagePullJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt"},
				Spec: appsv1beta1.ImagePullJobSpec{Image: "registry.example/rt:v1", ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
					// No node has this label: the job pulls nowhere.
					Selector:         &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kruise.e2e/no-such-node": suffix}}},
					PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
					CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](300)},
				}},
			}
			if _, err := kc.AppsV1beta1().ImagePullJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "ImagePullJob "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.ImagePullJob, error) {
					return kc.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.ImagePullJob, error) {
					return kc.AppsV1beta1().ImagePullJobs(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.ImagePullJobToV1beta1, appsv1alpha1.ImagePullJobFromV1beta1)
		},
		"ImageListPullJob": func(t *testing.T) {
			job := &appsv1alpha1.ImageListPullJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt"},
				Spec: appsv1alpha1.ImageListPullJobSpec{Images: []string{"registry.example/rt:v1", "registry.example/rt:v2"}, ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
					Selector:         &appsv1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kruise.e2e/no-such-node": suffix}}},
					CompletionPolicy: appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](300)},
				}},
			}
			if _, err := kc.AppsV1alpha1().ImageListPullJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "ImageListPullJob "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.ImageListPullJob, error) {
					return kc.AppsV1alpha1().ImageListPullJobs(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.ImageListPullJob, error) {
					return kc.AppsV1beta1().ImageListPullJobs(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.ImageListPullJobToV1beta1, appsv1alpha1.ImageListPullJobFromV1beta1)
		},
		"CloneSet": func(t *testing.T) {
			// Written as v1alpha1 with an in-place policy and a pre-download annotation, which
			// v1beta1 holds as rollingUpdate.podUpdatePolicy and a field.
			cs := &appsv1alpha1.CloneSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt",
					Annotations: map[string]string{appsv1alpha1.ImagePreDownloadParallelismKey: "2"}},
				Spec: appsv1alpha1.CloneSetSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rt-" + suffix}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rt-" + suffix}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}}},
					},
					UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
				},
			}
			if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "CloneSet "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.CloneSet, error) {
					return kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.CloneSet, error) {
					return kc.AppsV1beta1().CloneSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.CloneSetToV1beta1, appsv1alpha1.CloneSetFromV1beta1)
		},
		"DaemonSet": func(t *testing.T) {
			// Written as v1alpha1 with the deprecated Surging type and the progressive-create
			// annotation, which v1beta1 holds as Standard with maxSurge and partitionedScaling.
			// No node matches its nodeSelector, and no controller runs for it yet.
			ds := &appsv1alpha1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt",
					Annotations: map[string]string{appsv1alpha1.ProgressiveCreatePodAnnotation: "true"}},
				Spec: appsv1alpha1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rt-" + suffix}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rt-" + suffix}},
						Spec: corev1.PodSpec{NodeSelector: map[string]string{"kruise.e2e/no-such-node": suffix},
							Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}}},
					},
					UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
						Type: appsv1alpha1.SurgingDaemonSetRollingUpdateType, MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					}},
				},
			}
			if _, err := kc.AppsV1alpha1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "DaemonSet "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.DaemonSet, error) {
					return kc.AppsV1alpha1().DaemonSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.DaemonSet, error) {
					return kc.AppsV1beta1().DaemonSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.DaemonSetToV1beta1, appsv1alpha1.DaemonSetFromV1beta1)
		},
		"StatefulSet": func(t *testing.T) {
			// Written as v1beta1 with reserveOrdinals, a field v1alpha1 lacks: its v1alpha1 view
			// carries it in an annotation. No replicas, and no controller runs for it yet.
			sts := &appsv1beta1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt"},
				Spec: appsv1beta1.StatefulSetSpec{
					Replicas: ptr.To[int32](0),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rt-" + suffix}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "rt-" + suffix}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}}},
					},
					ReserveOrdinals: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-5")},
				},
			}
			if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "StatefulSet "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.StatefulSet, error) {
					return kc.AppsV1alpha1().StatefulSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.StatefulSet, error) {
					return kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.StatefulSetToV1beta1, appsv1alpha1.StatefulSetFromV1beta1)
			alpha, err := kc.AppsV1alpha1().StatefulSets(ns).Get(ctx, "rt", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if alpha.Annotations[appsv1alpha1.StatefulSetV1beta1FieldsAnnotation] == "" {
				t.Errorf("the v1alpha1 view does not carry reserveOrdinals in %s: %v", appsv1alpha1.StatefulSetV1beta1FieldsAnnotation, alpha.Annotations)
			}
		},
		"ContainerRecreateRequest": func(t *testing.T) {
			// A pod no node can take: it stays Pending, so the request is admitted (its pod
			// exists) and waits, and no daemon acts on it.
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never-scheduled"},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kruise.e2e/no-such-node": suffix},
					Containers:   []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}},
				},
			}
			if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			crr := &appsv1beta1.ContainerRecreateRequest{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt"},
				Spec: appsv1beta1.ContainerRecreateRequestSpec{
					PodName:    pod.Name,
					Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "main"}},
				},
			}
			if _, err := kc.AppsV1beta1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			roundTrip(ctx, t, "ContainerRecreateRequest "+ns+"/rt",
				func(ctx context.Context) (*appsv1alpha1.ContainerRecreateRequest, error) {
					return kc.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.ContainerRecreateRequest, error) {
					return kc.AppsV1beta1().ContainerRecreateRequests(ns).Get(ctx, "rt", metav1.GetOptions{})
				},
				appsv1alpha1.ContainerRecreateRequestToV1beta1, appsv1alpha1.ContainerRecreateRequestFromV1beta1)
		},
		"SidecarSet": func(t *testing.T) {
			// Written as v1alpha1 with a namespace and the custom-version label, which v1beta1
			// holds as a namespaceSelector and spec.customVersion. It selects no pod (none has
			// its label), and no controller runs for it yet.
			name := "e2e-conversion-rt-" + suffix
			ss := &appsv1alpha1.SidecarSet{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1alpha1.SidecarSetCustomVersionLabel: "v1"}},
				Spec: appsv1alpha1.SidecarSetSpec{
					Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rt-" + suffix}},
					Namespace: ns,
					Containers: []appsv1alpha1.SidecarContainer{{
						Container: corev1.Container{Name: "sidecar", Image: f.Image("public/busybox:1.35")},
					}},
				},
			}
			if _, err := kc.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = kc.AppsV1alpha1().SidecarSets().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
			})
			roundTrip(ctx, t, "SidecarSet "+name,
				func(ctx context.Context) (*appsv1alpha1.SidecarSet, error) {
					return kc.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
				},
				func(ctx context.Context) (*appsv1beta1.SidecarSet, error) {
					return kc.AppsV1beta1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
				},
				appsv1alpha1.SidecarSetToV1beta1, appsv1alpha1.SidecarSetFromV1beta1)
			beta, err := kc.AppsV1beta1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if beta.Spec.CustomVersion != "v1" || beta.Spec.NamespaceSelector == nil ||
				beta.Spec.NamespaceSelector.MatchLabels[appsv1alpha1.NamespaceNameLabel] != ns {
				t.Errorf("the v1beta1 view does not say the v1alpha1 namespace and custom version: %+v", beta.Spec)
			}
		},
	}
	for _, kind := range conversion.Kinds() {
		check, ok := checks[kind]
		if !ok {
			t.Errorf("/convert converts %s, but this test has no round trip for it", kind)
			continue
		}
		t.Run(kind, check)
	}
}

// object is what roundTrip needs of both versions of a kind.
type object interface {
	GetResourceVersion() string
	SetManagedFields([]metav1.ManagedFieldsEntry)
}

// roundTrip reads one object in both versions (until both reads see the same resourceVersion: a
// controller may be writing its status meanwhile) and checks that each is the Go conversion of the
// other. TypeMeta is left out (typed reads do not fill it) and so are managedFields (the API
// server keeps them as written).
func roundTrip[A, B object](ctx context.Context, t *testing.T, what string,
	getA func(context.Context) (A, error), getB func(context.Context) (B, error),
	toB func(A) B, toA func(B) A) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, what+" reads the same in v1alpha1 and v1beta1", func(ctx context.Context) (bool, string, error) {
		a, err := getA(ctx)
		if err != nil {
			return false, "", fmt.Errorf("reading as v1alpha1: %w", err)
		}
		b, err := getB(ctx)
		if err != nil {
			return false, "", fmt.Errorf("reading as v1beta1: %w", err)
		}
		if a.GetResourceVersion() != b.GetResourceVersion() {
			return false, "changed between the two reads", nil
		}
		a.SetManagedFields(nil)
		b.SetManagedFields(nil)
		clearTypeMeta(a)
		clearTypeMeta(b)
		wantB, wantA := clearTypeMeta(toB(a)), clearTypeMeta(toA(b))
		if !equality.Semantic.DeepEqual(wantB, b) {
			return false, "", fmt.Errorf("v1beta1 read is not the conversion of the v1alpha1 read (-want +got):\n%s", cmp.Diff(wantB, b))
		}
		if !equality.Semantic.DeepEqual(wantA, a) {
			return false, "", fmt.Errorf("v1alpha1 read is not the conversion of the v1beta1 read (-want +got):\n%s", cmp.Diff(wantA, a))
		}
		return true, "", nil
	})
}

func clearTypeMeta[T any](obj T) T {
	if o, ok := any(obj).(interface{ GetObjectKind() schema.ObjectKind }); ok {
		o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return obj
}
