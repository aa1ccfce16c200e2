//go:build e2e

// Package uninstall removes a Helm install of kruise from the local cluster and checks that
// nothing is left behind or stuck. It runs last, against the install that `make e2e-helm` made,
// and leaves the cluster without kruise (the next `make deploy` installs it again).
package uninstall

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	partOf       = "app.kubernetes.io/part-of=kruise"
	nodeImageCRD = "nodeimages.apps.kruise.io"
)

func TestHelmUninstallLeavesNothingStuck(t *testing.T) {
	f := framework.New(t)
	ctx := framework.Context(t, 6*time.Minute)
	helm := framework.Helm(ctx, t)
	kc := f.KruiseClient(t)
	crds, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}

	// Objects of every kind kruise serves, in a user namespace, left for after the uninstall.
	ns := f.NewNamespace(ctx, t, "uninstall")
	// The CRR's pod exists at admission (the validating webhook refuses a missing one) but no
	// node takes it; deleting it then makes the controller complete the CRR.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "never-scheduled"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kruise.e2e/no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35")}},
		},
	}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "left-over"},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    pod.Name,
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
		},
	}
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	job := framework.NewImagePullJob(ns, "left-over", f.Image("public/busybox:1.35"))
	framework.CreateImagePullJob(ctx, t, kc, job)
	// The controller has admitted both (it completes the CRR: its pod is gone).
	framework.WaitCRR(ctx, t, kc, ns, crr.Name, time.Minute, "completed by the controller",
		func(c *appsv1alpha1.ContainerRecreateRequest) bool {
			return c.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted
		})

	// The chart's default: kruise has switched NodeImage's CRD to its conversion webhook.
	framework.WaitFor(ctx, t, 2*time.Minute, "NodeImage's CRD converting through kruise's webhook", func(ctx context.Context) (bool, string, error) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter,
			fmt.Sprintf("spec.conversion %+v", crd.Spec.Conversion), nil
	})

	start := time.Now()
	helm("uninstall", "kruise", "--namespace", "default", "--wait", "--timeout", "3m")
	t.Logf("helm uninstall took %s", time.Since(start).Round(time.Millisecond))

	framework.WaitFor(ctx, t, 3*time.Minute, "kruise's namespaces deleted", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, name := range []string{framework.KruiseNamespace, "kruise-daemon-config"} {
			n, err := f.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, "", err
			}
			left = append(left, name+" ("+string(n.Status.Phase)+")")
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
	t.Logf("namespaces gone %s after the uninstall started", time.Since(start).Round(time.Millisecond))

	// Nothing cluster-scoped of the release stays.
	lo := metav1.ListOptions{LabelSelector: partOf}
	left := map[string]int{}
	if l, err := f.Client.RbacV1().ClusterRoles().List(ctx, lo); err == nil {
		left["ClusterRole"] = len(l.Items)
	} else {
		t.Fatal(err)
	}
	if l, err := f.Client.RbacV1().ClusterRoleBindings().List(ctx, lo); err == nil {
		left["ClusterRoleBinding"] = len(l.Items)
	} else {
		t.Fatal(err)
	}
	if l, err := f.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, lo); err == nil {
		left["ValidatingAdmissionPolicy"] = len(l.Items)
	} else {
		t.Fatal(err)
	}
	if l, err := f.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, lo); err == nil {
		left["ValidatingAdmissionPolicyBinding"] = len(l.Items)
	} else {
		t.Fatal(err)
	}
	for kind, n := range left {
		if n != 0 {
			t.Errorf("%d %s objects labelled %s survived helm uninstall", n, kind, partOf)
		}
	}

	// The pre-delete hook turned the conversion back to strategy None before the webhook Service
	// went: NodeImages still read in v1alpha1, the version not stored. Without it every such read
	// would fail calling a Service that no longer exists.
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, nodeImageCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conv := crd.Spec.Conversion; conv == nil || conv.Strategy != apiextensionsv1.NoneConverter || conv.Webhook != nil {
		t.Errorf("%s still converts through a webhook after helm uninstall: %+v", nodeImageCRD, conv)
	}
	if _, ok := crd.Annotations[certs.ConversionResetAnnotation]; !ok {
		t.Errorf("%s has no %s annotation: the reset was not the hook's", nodeImageCRD, certs.ConversionResetAnnotation)
	}
	if _, err := kc.AppsV1alpha1().NodeImages().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing NodeImages as v1alpha1 after helm uninstall: %v", err)
	}
	if _, err := f.Client.BatchV1().Jobs(framework.KruiseNamespace).Get(ctx, "kruise-conversion-reset", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hook Job kruise-conversion-reset should be gone (hook-succeeded): %v", err)
	}

	// Helm keeps the CRDs of crds/ and the objects in them: users' data is not deleted by an
	// uninstall.
	if _, err := kc.AppsV1beta1().ImagePullJobs(ns).Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the ImagePullJob should survive helm uninstall: %v", err)
	}

	// Without any kruise process left, every object can still be deleted: no finalizer waits for
	// a controller that is gone. Delete the objects, then the CRDs.
	if err := f.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "the namespace with kruise objects deleted", func(ctx context.Context) (bool, string, error) {
		_, err := f.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		if c.Spec.Group == "apps.kruise.io" {
			names = append(names, c.Name)
			if err := crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The chart's CRDs, one file each in its crds/ directory, which Helm never deletes.
	files, err := filepath.Glob(filepath.Join(framework.ChartDir(t), "crds", "apps.kruise.io_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the chart's CRDs: %v (%d files)", err, len(files))
	}
	if len(names) != len(files) {
		t.Errorf("helm uninstall should keep the chart's %d CRDs, found %v", len(files), names)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "the CRDs deleted (NodeImages included)", func(ctx context.Context) (bool, string, error) {
		var still []string
		for _, name := range names {
			_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				still = append(still, name)
			} else if !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return len(still) == 0, strings.Join(still, ", "), nil
	})
	t.Logf("everything gone %s after the uninstall started", time.Since(start).Round(time.Millisecond))
}
