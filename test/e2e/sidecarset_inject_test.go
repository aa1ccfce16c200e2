//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

var sidecarSetsV1alpha1 = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}

// createSidecarSet creates ss (cluster-scoped) and deletes it when the test ends.
func createSidecarSet(ctx context.Context, t *testing.T, f *framework.Framework, ss *appsv1beta1.SidecarSet) {
	t.Helper()
	c := f.KruiseClient(t).AppsV1beta1().SidecarSets()
	if _, err := c.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating SidecarSet %s: %v", ss.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Delete(ctx, ss.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting SidecarSet %s: %v", ss.Name, err)
		}
	})
}

// waitScoped waits until the injection webhook's matchCondition (kept by kruise-controller's
// leader) names namespace: only then are its pods sent to the webhook.
func waitScoped(ctx context.Context, t *testing.T, f *framework.Framework, namespace string) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, "the injection webhook's matchCondition names "+namespace, func(ctx context.Context) (bool, string, error) {
		cfg, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, w := range cfg.Webhooks {
			if w.Name != sidecarsetscope.DefaultWebhook {
				continue
			}
			for _, mc := range w.MatchConditions {
				if mc.Name == sidecarsetscope.ConditionName {
					return strings.Contains(mc.Expression, "'"+namespace+"'"), fmt.Sprintf("%d characters", len(mc.Expression)), nil
				}
			}
		}
		return false, "no " + sidecarsetscope.ConditionName + " condition on " + sidecarsetscope.DefaultWebhook, nil
	})
}

// onlyPod waits for the one pod of the Deployment's selector to have every container running and
// returns it.
func onlyPod(ctx context.Context, t *testing.T, f *framework.Framework, namespace string, selector map[string]string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	framework.WaitFor(ctx, t, 2*time.Minute, "the Deployment's pod running with every container", func(ctx context.Context) (bool, string, error) {
		list, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(list.Items)), err
		}
		p := &list.Items[0]
		if p.Status.Phase == corev1.PodFailed {
			return false, "", fmt.Errorf("pod %s failed: %s", p.Name, framework.DescribeSidecarPod(p))
		}
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if st.State.Running == nil {
				return false, framework.DescribeSidecarPod(p), nil
			}
		}
		pod = p
		return len(p.Status.ContainerStatuses) == len(p.Spec.Containers), framework.DescribeSidecarPod(p), nil
	})
	return pod
}

func deployment(namespace, name string, podLabels map[string]string, containers ...corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: containers},
			},
		},
	}
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The v1.7 seed: a native sidecar (restartPolicy Always, postStart hook) injected into a
// Deployment's pod, started before the app: the app's first command checks the file the
// sidecar's postStart hook wrote into the injected volume, and exits non-zero without it.
func TestSidecarSetInjectNativeSeed(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecarset-native")

	raw, err := os.ReadFile(filepath.Join("testdata", "seeds", "openkruise-1.7-native-sidecar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		t.Fatal(err)
	}
	name := "native-" + rand.String(5)
	obj.SetName(name)
	podLabels := map[string]string{"app": "nginx", "seed": name}
	_ = unstructured.SetNestedStringMap(obj.Object, podLabels, "spec", "selector", "matchLabels")
	_ = unstructured.SetNestedField(obj.Object, ns, "spec", "namespace")
	inits, _, _ := unstructured.NestedSlice(obj.Object, "spec", "initContainers")
	inits[0].(map[string]any)["image"] = f.Image("public/busybox:1.35")
	_ = unstructured.SetNestedSlice(obj.Object, inits, "spec", "initContainers")
	sets := f.Dynamic(t).Resource(sidecarSetsV1alpha1)
	if _, err := sets.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the seed SidecarSet: %v", err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	waitScoped(ctx, t, f, ns)

	app := corev1.Container{
		Name: "app", Image: f.Image("public/busybox:1.35"),
		Command:      []string{"sh", "-c", "test -f /shared/sidecar-started || exit 3; trap 'exit 0' TERM; while true; do sleep 1; done"},
		VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
	}
	d := deployment(ns, "web", podLabels, app)
	// A Deployment's template must declare the volumes its containers mount: the pod's own
	// "shared" wins over the SidecarSet's of the same name, and the sidecar mounts it.
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	pod := onlyPod(ctx, t, f, ns, podLabels)

	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "sidecar" ||
		pod.Spec.InitContainers[0].RestartPolicy == nil || *pod.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("the native sidecar is not injected as an init container with restartPolicy Always: %+v", pod.Spec.InitContainers)
	}
	if got := envValue(&pod.Spec.InitContainers[0], sidecarrules.InjectedEnv); got != "true" {
		t.Errorf("sidecar env %s=%q, want true", sidecarrules.InjectedEnv, got)
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == "app" && st.RestartCount != 0 {
			t.Errorf("the app restarted %d times: it started before the sidecar's postStart finished", st.RestartCount)
		}
	}
	var side *corev1.ContainerStatus
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == "sidecar" {
			side = &pod.Status.InitContainerStatuses[i]
		}
	}
	appSt := framework.ContainerStatusOf(pod, "app")
	if side == nil || appSt == nil || side.State.Running == nil || appSt.State.Running == nil {
		t.Fatalf("containers not running: %s", framework.DescribeSidecarPod(pod))
	}
	if appSt.State.Running.StartedAt.Before(&side.State.Running.StartedAt) {
		t.Errorf("the app started at %s, before the sidecar at %s", appSt.State.Running.StartedAt, side.State.Running.StartedAt)
	}
	if got := pod.Annotations[sidecarrules.InjectedListAnnotation]; got != name {
		t.Errorf("annotation %s=%q, want %q", sidecarrules.InjectedListAnnotation, got, name)
	}
	specs, err := sidecarrules.UpgradeSpecs(pod, sidecarrules.HashAnnotation)
	if err != nil || len(specs[name].SidecarList) != 1 || specs[name].SidecarList[0] != "sidecar" || specs[name].Hash == "" {
		t.Errorf("annotation %s = %q (%v), want the native sidecar listed with a hash", sidecarrules.HashAnnotation, pod.Annotations[sidecarrules.HashAnnotation], err)
	}
}

// A regular sidecar container with its own volume and an env var transferred from the app:
// injected before the app (the default), the volume added to the pod, the env copied.
func TestSidecarSetInjectRegularContainer(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecarset-regular")
	name := "regular-" + rand.String(5)
	podLabels := map[string]string{"app": "web", "sidecarset": name}
	createSidecarSet(ctx, t, f, &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"sidecarset": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []appsv1beta1.SidecarContainer{{
				Container: corev1.Container{
					Name: "log-agent", Image: f.Image("public/busybox:1.35"),
					Command:      []string{"sh", "-c", "echo \"$APP_ROLE\" > /logs/role; trap 'exit 0' TERM; while true; do sleep 1; done"},
					VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}},
				},
				TransferEnv: []appsv1beta1.TransferEnvVar{{SourceContainerName: "app", EnvName: "APP_ROLE"}},
			}},
			Volumes: []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	waitScoped(ctx, t, f, ns)

	app := corev1.Container{
		Name: "app", Image: f.Image("public/busybox:1.35"),
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
		Env:     []corev1.EnvVar{{Name: "APP_ROLE", Value: "frontend"}},
	}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", podLabels, app), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	pod := onlyPod(ctx, t, f, ns, podLabels)
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[0].Name != "log-agent" || pod.Spec.Containers[1].Name != "app" {
		t.Fatalf("containers %v, want log-agent before app", containerNames(pod.Spec.Containers))
	}
	agent := &pod.Spec.Containers[0]
	if got := envValue(agent, "APP_ROLE"); got != "frontend" {
		t.Errorf("log-agent APP_ROLE=%q, want the app's frontend", got)
	}
	if got := envValue(agent, sidecarrules.InjectedEnv); got != "true" {
		t.Errorf("log-agent %s=%q, want true", sidecarrules.InjectedEnv, got)
	}
	found := false
	for _, v := range pod.Spec.Volumes {
		found = found || (v.Name == "logs" && v.EmptyDir != nil)
	}
	if !found {
		t.Errorf("volume logs not injected: %+v", pod.Spec.Volumes)
	}
}

// Paused injection: a pod created while the SidecarSet's injection is paused gets nothing, and
// the paused SidecarSet is left out of the webhook's condition, so the pod is not even sent.
func TestSidecarSetInjectionPaused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecarset-paused")
	name := "paused-" + rand.String(5)
	podLabels := map[string]string{"app": "web", "sidecarset": name}
	createSidecarSet(ctx, t, f, &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"sidecarset": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			InjectionStrategy: appsv1beta1.SidecarSetInjectionStrategy{Paused: true},
			Containers: []appsv1beta1.SidecarContainer{{Container: corev1.Container{
				Name: "agent", Image: f.Image("public/busybox:1.35"), Command: []string{"sleep", "3600"},
			}}},
		},
	})
	app := corev1.Container{Name: "app", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", podLabels, app), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	pod := onlyPod(ctx, t, f, ns, podLabels)
	if names := containerNames(pod.Spec.Containers); len(names) != 1 || names[0] != "app" {
		t.Errorf("containers %v: a paused SidecarSet injected", names)
	}
	if _, ok := pod.Annotations[sidecarrules.InjectedListAnnotation]; ok {
		t.Errorf("annotation %s set on a pod a paused SidecarSet selects", sidecarrules.InjectedListAnnotation)
	}
	cfg, err := f.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Webhooks {
		for _, mc := range w.MatchConditions {
			if w.Name == sidecarsetscope.DefaultWebhook && strings.Contains(mc.Expression, "'"+ns+"'") {
				t.Errorf("the paused SidecarSet's namespace is in the webhook's condition: %s", mc.Expression)
			}
		}
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
