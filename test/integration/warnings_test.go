package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

const warningsNS = "kruise-warnings"

// warnings records the warnings the API server sends to one client.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// take returns the warnings seen since the last call.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// warnedClient is a kruise client acting as user (the admin when empty)
// whose warnings are recorded.
func warnedClient(t *testing.T, cfg *rest.Config, user string) (kruiseclient.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	c := rest.CopyConfig(cfg)
	c.WarningHandler = w
	if user != "" {
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
	}
	k, err := kruiseclient.NewForConfig(c)
	require.NoError(t, err)
	return k, w
}

// TestAPIWarnings runs the ValidatingAdmissionPolicy of
// deploy/base/api-warnings.yaml in a real API server: values OpenKruise
// admits but that are most likely mistakes are admitted with a warning
// saying how kruise reads them; sensible objects get none, nor do kruise's
// own writes.
func TestAPIWarnings(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	cx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: warningsNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	installPolicy(t, kube, "../../deploy/base/api-warnings.yaml")
	user, warned := warnedClient(t, c.config, "")

	job := func(name string, mut func(*v1beta1.ImagePullJobTemplate)) *v1beta1.ImagePullJob {
		j := &v1beta1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: warningsNS},
			Spec: v1beta1.ImagePullJobSpec{Image: "registry.example/app:v1"}}
		mut(&j.Spec.ImagePullJobTemplate)
		return j
	}
	// The policy takes effect once the API server's policy informer has it.
	probe := 0
	waitFor(t, "the warnings policy to warn", func(ctx context.Context) (bool, error) {
		probe++
		_, err := user.AppsV1beta1().ImagePullJobs(warningsNS).Create(ctx, job(fmt.Sprintf("probe-%d", probe), func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)}
		}), metav1.CreateOptions{})
		require.NoError(t, err)
		return len(warned.take()) > 0, nil
	})

	jobCases := []struct {
		name string
		mut  func(*v1beta1.ImagePullJobTemplate)
		want string // "" = no warning
	}{
		{"sensible", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](50), BackoffLimit: ptr.To[int32](0)}
			tp.CompletionPolicy = v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](50), TTLSecondsAfterFinished: ptr.To[int32](0)}
		}, ""},
		{"timeout-zero", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)}
		}, "spec.pullPolicy.timeoutSeconds 0 is below 1: kruise pulls with the default timeout of 600 seconds"},
		{"backoff-negative", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullPolicy = &v1beta1.PullPolicy{BackoffLimit: ptr.To[int32](-2)}
		}, "spec.pullPolicy.backoffLimit -2 is below 0: kruise retries a failed pull 3 times (the default)"},
		{"deadline-zero", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](-1)}
			tp.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](0)
		}, "spec.completionPolicy.activeDeadlineSeconds 0 is below 1: the deadline has passed when the job starts"},
		{"imagepullpolicy-never", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.ImagePullPolicy = "Never"
		}, "spec.imagePullPolicy 'Never' is neither Always nor IfNotPresent: kruise pulls as with Always (as OpenKruise does)"},
		{"ttl-negative", func(tp *v1beta1.ImagePullJobTemplate) {
			tp.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](-1)
		}, "spec.completionPolicy.ttlSecondsAfterFinished -1 is below 0: the job is deleted as soon as it finishes, as with 0"},
	}
	for _, tc := range jobCases {
		t.Run("ImagePullJob/"+tc.name, func(t *testing.T) {
			_, err := user.AppsV1beta1().ImagePullJobs(warningsNS).Create(ctx(t), job(tc.name, tc.mut), metav1.CreateOptions{})
			require.NoError(t, err)
			requireWarning(t, warned.take(), tc.want)
		})
		t.Run("ImageListPullJob/"+tc.name, func(t *testing.T) {
			j := job(tc.name, tc.mut)
			list := &v1alpha1.ImageListPullJob{ObjectMeta: j.ObjectMeta, Spec: v1alpha1.ImageListPullJobSpec{
				Images: []string{j.Spec.Image}, ImagePullJobTemplate: v1alpha1.ImagePullJobFromV1beta1(j).Spec.ImagePullJobTemplate}}
			_, err := user.AppsV1alpha1().ImageListPullJobs(warningsNS).Create(ctx(t), list, metav1.CreateOptions{})
			require.NoError(t, err)
			requireWarning(t, warned.take(), tc.want)
		})
	}

	t.Run("ImageListPullJob/deadline-below-timeout", func(t *testing.T) {
		list := &v1beta1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: "short-deadline", Namespace: warningsNS},
			Spec: v1beta1.ImageListPullJobSpec{Images: []string{"registry.example/app:v1"}, ImagePullJobTemplate: v1beta1.ImagePullJobTemplate{
				CompletionPolicy: v1beta1.CompletionPolicy{ActiveDeadlineSeconds: ptr.To[int64](30)}}}}
		_, err := user.AppsV1beta1().ImageListPullJobs(warningsNS).Create(ctx(t), list, metav1.CreateOptions{})
		require.NoError(t, err)
		requireWarning(t, warned.take(),
			"spec.completionPolicy.activeDeadlineSeconds 30 is shorter than spec.pullPolicy.timeoutSeconds 600: the ImagePullJob of each image pulls with timeoutSeconds 30")

		// Updates warn only when the spec changes.
		got, err := user.AppsV1beta1().ImageListPullJobs(warningsNS).Get(ctx(t), "short-deadline", metav1.GetOptions{})
		require.NoError(t, err)
		got.Labels = map[string]string{"team": "a"}
		_, err = user.AppsV1beta1().ImageListPullJobs(warningsNS).Update(ctx(t), got, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Empty(t, warned.take(), "a metadata update does not warn again")
	})

	t.Run("NodeImage", func(t *testing.T) {
		ni := &v1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "warned-node"}, Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{
			"registry.example/good": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}}},
			"registry.example/bad": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}, {Tag: "v2", PullPolicy: &v1beta1.ImageTagPullPolicy{
				ActiveDeadlineSeconds: ptr.To[int64](0)}}}},
			"registry.example/odd": {Tags: []v1beta1.ImageTagSpec{{Tag: "v1", ImagePullPolicy: "Sometimes"}}},
		}}}
		_, err := user.AppsV1beta1().NodeImages().Create(ctx(t), ni, metav1.CreateOptions{})
		require.NoError(t, err)
		seen := warned.take()
		require.Len(t, seen, 1, "warnings: %q", seen)
		requireWarning(t, seen, "registry.example/bad")
		requireWarning(t, seen, "registry.example/odd")
		requireWarning(t, seen, "a tag value out of its range is read by kruise-daemon as follows")
		assert.NotContains(t, seen[0], "registry.example/good")
	})

	t.Run("ContainerRecreateRequest", func(t *testing.T) {
		crr := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "warned", Namespace: warningsNS},
			Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "web", Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
				Strategy: &v1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: -3}, TTLSecondsAfterFinished: ptr.To[int32](-4)}}
		_, err := user.AppsV1alpha1().ContainerRecreateRequests(warningsNS).Create(ctx(t), crr, metav1.CreateOptions{})
		require.NoError(t, err)
		seen := warned.take()
		require.Len(t, seen, 2, "warnings: %q", seen)
		requireWarning(t, seen, "spec.strategy.minStartedSeconds -3 is below 0: read as 0")
		requireWarning(t, seen, "spec.ttlSecondsAfterFinished -4 is below 0: the request is deleted as soon as it completes, as with 0")
	})

	t.Run("ContainerRecreateRequest metadata", func(t *testing.T) {
		crrs := user.AppsV1alpha1().ContainerRecreateRequests(warningsNS)
		crr := &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "relabelled", Namespace: warningsNS,
			Labels: map[string]string{v1alpha1.ContainerRecreateRequestActiveKey: "true"}},
			Spec: v1alpha1.ContainerRecreateRequestSpec{PodName: "web", Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}}}}
		_, err := crrs.Create(ctx(t), crr, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Empty(t, warned.take())
		_, err = crrs.Patch(ctx(t), "relabelled", types.MergePatchType, []byte(`{"metadata":{"labels":{"crr.apps.kruise.io/active":null}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		requireWarning(t, warned.take(), "label crr.apps.kruise.io/active changed on an unfinished request")
		_, err = crrs.Patch(ctx(t), "relabelled", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"crr.apps.kruise.io/unready-acquired":"2025-01-01T00:00:00Z"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		requireWarning(t, warned.take(), "annotation crr.apps.kruise.io/unready-acquired is kruise-controller's to write")
		_, err = crrs.Patch(ctx(t), "relabelled", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		assert.Empty(t, warned.take(), "other metadata is the creator's")
	})

	// Keys kruise writes on pods, in a workload's template: never copied to pods (OpenKruise
	// admits such templates: a warning, not a refusal). The CRDs' schemas keep the template
	// schemaless, so the API server needs nothing else of the object.
	t.Run("Workload template with kruise's pod keys", func(t *testing.T) {
		tmpl := map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{"app": "web", v1beta1.SpecifiedDeleteKey: "true"},
				"annotations": map[string]any{"apps.kruise.io/inplace-update-state": "{}", "team": "a"},
			},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx"}}},
		}
		body := func(kind string) []byte {
			raw, err := json.Marshal(map[string]any{
				"apiVersion": "apps.kruise.io/v1beta1", "kind": kind,
				"metadata": map[string]any{"name": "reserved-" + strings.ToLower(kind), "namespace": warningsNS},
				"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": tmpl},
			})
			require.NoError(t, err)
			return raw
		}
		for kind, resource := range map[string]string{"CloneSet": "clonesets", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"} {
			err := user.AppsV1beta1().RESTClient().Post().Namespace(warningsNS).Resource(resource).Body(body(kind)).Do(ctx(t)).Error()
			require.NoError(t, err, kind)
			seen := warned.take()
			require.Len(t, seen, 1, "%s warnings: %q", kind, seen)
			requireWarning(t, seen, "spec.template.metadata label apps.kruise.io/specified-delete, annotation apps.kruise.io/inplace-update-state: "+
				"kruise writes this on the pods it manages and decides by it; it is never copied from the template")
		}
		cs, err := user.AppsV1beta1().CloneSets(warningsNS).Get(ctx(t), "reserved-cloneset", metav1.GetOptions{})
		require.NoError(t, err)
		cs.Spec.Template.Labels, cs.Spec.Template.Annotations = map[string]string{"app": "web"}, nil
		_, err = user.AppsV1beta1().CloneSets(warningsNS).Update(ctx(t), cs, metav1.UpdateOptions{})
		require.NoError(t, err)
		assert.Empty(t, warned.take(), "a template without them")
	})

	t.Run("kruise-controller is not warned", func(t *testing.T) {
		grantAll(t, kube, controllerUser)
		controller, controllerWarned := warnedClient(t, c.config, controllerUser)
		// The grant takes effect once the API server's RBAC cache has it.
		waitFor(t, "the grant to the controller", func(ctx context.Context) (bool, error) {
			_, err := controller.AppsV1beta1().ImagePullJobs(warningsNS).Create(ctx, job("by-controller", func(tp *v1beta1.ImagePullJobTemplate) {
				tp.PullPolicy = &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](0)}
			}), metav1.CreateOptions{})
			if apierrors.IsForbidden(err) {
				return false, nil
			}
			return true, err
		})
		assert.Empty(t, controllerWarned.take())
	})
}

// requireWarning asserts that one of the warnings seen contains want, or
// that there is none when want is empty.
func requireWarning(t *testing.T, seen []string, want string) {
	t.Helper()
	if want == "" {
		require.Empty(t, seen)
		return
	}
	for _, w := range seen {
		if strings.Contains(w, want) {
			return
		}
	}
	require.Failf(t, "warning missing", "no warning contains %q; warnings: %q", want, seen)
}

// grantAll makes user a cluster admin (the test acts as kruise's own
// service accounts).
func grantAll(t *testing.T, kube kubernetes.Interface, user string) {
	t.Helper()
	_, err := kube.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "all-" + strings.ReplaceAll(user, ":", "-")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}
