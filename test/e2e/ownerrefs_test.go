//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// impersonated is a config acting as user in groups.
func impersonated(f *framework.Framework, user string, groups ...string) *rest.Config {
	cfg := rest.CopyConfig(f.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	return cfg
}

// blocking is a controller reference to a kruise kind with blockOwnerDeletion, as kruise-controller
// writes them.
func blocking(kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: appsv1beta1.SchemeGroupVersion.String(), Kind: kind, Name: "owner",
		UID: types.UID("00000000-0000-0000-0000-" + fmt.Sprintf("%012d", len(kind))), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// The local API server runs the admission plugin OwnerReferencesPermissionEnforcement (on by
// default in OpenShift): an owner reference with blockOwnerDeletion is admitted only from whoever
// may update the owner's finalizers, so every e2e test runs under it. kruise-controller's account
// may, for each kind that owns what it creates: pods of a CloneSet, an Advanced StatefulSet or
// DaemonSet, a ControllerRevision of a SidecarSet, an ImagePullJob of an ImageListPullJob or a
// CloneSet (server-side dry runs, impersonating it). A tenant who may create pods but not update
// a CloneSet's finalizers is refused: the plugin is on.
func TestOwnerReferencesPermissionEnforcement(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "ownerrefs")
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	ctrlCfg := impersonated(f, "system:serviceaccount:"+framework.KruiseNamespace+":kruise-controller",
		"system:serviceaccounts", "system:serviceaccounts:"+framework.KruiseNamespace)
	ctrl, err := kubernetes.NewForConfig(ctrlCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctrlKruise, err := versioned.NewForConfig(ctrlCfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(owner string) *corev1.Pod {
		p := f.BusyboxPod(ns, "owned-by-"+strings.ToLower(owner), "main")
		p.OwnerReferences = []metav1.OwnerReference{blocking(owner)}
		return p
	}
	creates := map[string]func(ctx context.Context) (runtime.Object, error){
		"pod of a CloneSet": func(ctx context.Context) (runtime.Object, error) {
			return ctrl.CoreV1().Pods(ns).Create(ctx, pod("CloneSet"), dryRun)
		},
		"pod of a StatefulSet": func(ctx context.Context) (runtime.Object, error) {
			return ctrl.CoreV1().Pods(ns).Create(ctx, pod("StatefulSet"), dryRun)
		},
		"pod of a DaemonSet": func(ctx context.Context) (runtime.Object, error) {
			return ctrl.CoreV1().Pods(ns).Create(ctx, pod("DaemonSet"), dryRun)
		},
		"ControllerRevision of a SidecarSet": func(ctx context.Context) (runtime.Object, error) {
			rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-sidecarset", Namespace: framework.KruiseNamespace,
				OwnerReferences: []metav1.OwnerReference{blocking("SidecarSet")}}, Revision: 1, Data: runtime.RawExtension{Raw: []byte("{}")}}
			return ctrl.AppsV1().ControllerRevisions(framework.KruiseNamespace).Create(ctx, rev, dryRun)
		},
		"ImagePullJob of an ImageListPullJob": func(ctx context.Context) (runtime.Object, error) {
			job := &appsv1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-list", Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{blocking("ImageListPullJob")}},
				Spec: appsv1beta1.ImagePullJobSpec{Image: f.Image("public/busybox:1.35")}}
			return ctrlKruise.AppsV1beta1().ImagePullJobs(ns).Create(ctx, job, dryRun)
		},
	}
	for what, create := range creates {
		if _, err := create(ctx); err != nil {
			t.Errorf("kruise-controller creating a %s: %v", what, err)
		}
	}

	const tenant = "e2e-ownerrefs-tenant"
	if _, err := f.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: tenant}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user, err := kubernetes.NewForConfig(impersonated(f, tenant))
	if err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(ctx, t, time.Minute, "a tenant's blocking owner reference to a CloneSet refused by the plugin", func(ctx context.Context) (bool, string, error) {
		plain := f.BusyboxPod(ns, "plain", "main")
		if _, err := user.CoreV1().Pods(ns).Create(ctx, plain, dryRun); err != nil {
			return false, "the tenant's RBAC not in effect yet: " + err.Error(), nil
		}
		_, err := user.CoreV1().Pods(ns).Create(ctx, pod("CloneSet"), dryRun)
		if err == nil {
			return false, "admitted: the API server does not run OwnerReferencesPermissionEnforcement", nil
		}
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot set blockOwnerDeletion"), err.Error(), nil
	})
}
