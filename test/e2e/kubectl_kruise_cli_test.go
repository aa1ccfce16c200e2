//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// set, rollout approve, scaledown and expose of the kubectl-kruise plugin, run as a user runs
// them on one CloneSet, each checked against the objects it changed. They run in order: each
// starts from the CloneSet the one before left.
func TestKubectlKruiseSetApproveScaleDownExpose(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-cli")
	run := kubectlKruise(ctx, t)
	original, variant := f.Image("public/busybox:1.35"), f.BusyboxVariant(t)

	cs := busyboxCloneSet(f, ns, "web", 3, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	cs.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 3)

	t.Run("set", func(t *testing.T) {
		out, _, code := run("-n", ns, "set", "image", "cloneset/web", "main="+variant)
		if code != 0 || out != "cloneset.apps.kruise.io/web image updated\n" {
			t.Fatalf("set image: exit %d, %q", code, out)
		}
		after := waitPodsSettled(ctx, t, f, kc, ns, "web", 3)
		for name, p := range after {
			if b, ok := before[name]; !ok || b.UID != p.UID || p.Spec.Containers[0].Image != variant {
				t.Errorf("pod %s (%s) at %s after set image: want the same pods updated in place", name, p.UID, p.Spec.Containers[0].Image)
			}
		}
		// The other setters, as a server dry run: the API server takes their patches (the
		// custom resource's merge patch), nothing changes.
		for args, want := range map[string]string{
			"env cloneset/web STAGE=prod":                       `[{"name":"STAGE","value":"prod"}]`,
			"resources cloneset/web -c main --requests=cpu=10m": `{"requests":{"cpu":"10m"}}`,
			"serviceaccount clone/web default":                  `default`,
			"env statefulset.apps.kruise.io/nope A=b":           "",
		} {
			field := map[string]string{"env": ".env", "resources": ".resources", "serviceaccount": ""}[strings.Fields(args)[0]]
			jsonpath := "{.spec.template.spec.containers[0]" + field + "}"
			if field == "" {
				jsonpath = "{.spec.template.spec.serviceAccountName}"
			}
			out, stderr, code := run(append(append([]string{"-n", ns, "set"}, strings.Fields(args)...), "--dry-run=server", "-o", "jsonpath="+jsonpath)...)
			if want == "" {
				if code == 0 || !strings.Contains(stderr, "not found") {
					t.Errorf("set %s: exit %d, stderr %q; want not found", args, code, stderr)
				}
				continue
			}
			if code != 0 || out != want {
				t.Errorf("set %s --dry-run=server: exit %d, %q; want %q", args, code, out, want)
			}
		}
		got, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(got.Spec.Template.Spec.Containers[0].Env) != 0 || got.Spec.Template.Spec.ServiceAccountName != "" {
			t.Errorf("after server dry runs: %v, template %+v; want it unchanged", err, got.Spec.Template.Spec)
		}
	})

	t.Run("approve", func(t *testing.T) {
		// Hold all but one pod back, roll the image back: one pod is updated, then approve
		// releases the partition and the other two follow.
		// A JSON patch: a merge patch would replace the whole containers list.
		mustPatchCloneSet(ctx, t, kc, ns, "web", fmt.Sprintf(`[{"op":"add","path":"/spec/updateStrategy/partition","value":2},{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, original))
		framework.WaitFor(ctx, t, cloneSetTimeout, "one pod updated and ready", func(ctx context.Context) (bool, string, error) {
			got, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return got.Status.ObservedGeneration == got.Generation && got.Status.UpdatedReadyReplicas == 1, fmt.Sprintf("%+v", got.Status), nil
		})
		out, _, code := run("-n", ns, "rollout", "approve", "cloneset/web")
		if code != 0 || out != "cloneset.apps.kruise.io/web approved\n" {
			t.Fatalf("rollout approve: exit %d, %q", code, out)
		}
		after := waitPodsSettled(ctx, t, f, kc, ns, "web", 3)
		for name, p := range after {
			if p.Spec.Containers[0].Image != original {
				t.Errorf("pod %s at %s after approve, want %s", name, p.Spec.Containers[0].Image, original)
			}
		}
		if out, _, _ := run("-n", ns, "rollout", "approve", "cloneset/web"); out != "cloneset.apps.kruise.io/web already approved\n" {
			t.Errorf("second approve: %q, want already approved", out)
		}
		// A Rollout: approved through kruise-rollout's CRD, or refused clearly without it.
		_, stderr, code := run("-n", ns, "rollout", "approve", "rollout/nope")
		if code == 0 || !strings.Contains(stderr, "rollouts.rollouts.kruise.io is not installed") && !strings.Contains(stderr, "not found") {
			t.Errorf("approve rollout/nope: exit %d, stderr %q; want the CRD missing or the Rollout not found", code, stderr)
		}
	})

	t.Run("scaledown", func(t *testing.T) {
		pods := activeClonePods(ctx, t, f, ns, "web")
		var victim corev1.Pod
		for _, p := range pods {
			victim = p
			break
		}
		out, _, code := run("-n", ns, "scaledown", "cloneset/web", "--pods="+victim.Name)
		if code != 0 || out != fmt.Sprintf("cloneset.apps.kruise.io/web scaled down to 2 replicas, deleting pods %s\n", victim.Name) {
			t.Fatalf("scaledown: exit %d, %q", code, out)
		}
		after := waitPodsSettled(ctx, t, f, kc, ns, "web", 2, victim.UID)
		for name, p := range after {
			if b, ok := pods[name]; !ok || b.UID != p.UID {
				t.Errorf("pod %s is new: scaledown must delete the pod named and create none", name)
			}
		}
		_, stderr, code := run("-n", ns, "scaledown", "cloneset/web", "--pods=not-its-pod")
		if code == 0 || !strings.Contains(stderr, `"not-its-pod"`) {
			t.Errorf("scaledown of a missing pod: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("expose", func(t *testing.T) {
		out, _, code := run("-n", ns, "expose", "cloneset", "web", "--port=80", "--target-port=8080")
		if code != 0 || out != "service/web exposed\n" {
			t.Fatalf("expose: exit %d, %q", code, out)
		}
		svc, err := f.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil || fmt.Sprint(svc.Spec.Selector) != "map[app:web]" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(8080) {
			t.Fatalf("service web: %v, %+v; want selector app=web, port 80 to 8080", err, svc.Spec)
		}
		pods := activeClonePods(ctx, t, f, ns, "web")
		framework.WaitFor(ctx, t, time.Minute, "the Service's endpoints are the CloneSet's pods", func(ctx context.Context) (bool, string, error) {
			slices, err := f.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
			if err != nil {
				return false, "", err
			}
			var names []string
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.TargetRef != nil && e.Conditions.Ready != nil && *e.Conditions.Ready {
						if _, ok := pods[e.TargetRef.Name]; ok {
							names = append(names, e.TargetRef.Name)
						}
					}
				}
			}
			return len(names) == len(pods), fmt.Sprint(names), nil
		})
	})
}

// `exec -S SIDECAR` runs in the working copy of a hot-upgrade sidecar, named by a pod or by its
// CloneSet.
func TestKubectlKruiseExecHotSidecar(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-exec")
	name := "kkhot-" + rand.String(5)
	hotSidecarSet(ctx, t, f, ns, name, f.Image("public/busybox:1.35"), f.EmptySidecarImage(t))
	waitScoped(ctx, t, f, ns)
	cs := busyboxCloneSet(f, ns, "web", 1, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.Template.Labels["sidecarset"] = name
	createCloneSet(ctx, t, kc, cs)
	pod := onlyPod(ctx, t, f, ns, map[string]string{"app": "web"})
	working := map[string]string{}
	if err := json.Unmarshal([]byte(pod.Annotations["kruise.io/sidecarset-working-hotupgrade-container"]), &working); err != nil || working["mesh"] == "" {
		t.Fatalf("pod %s: working-container annotation %q (%v)", pod.Name, pod.Annotations["kruise.io/sidecarset-working-hotupgrade-container"], err)
	}
	run := kubectlKruise(ctx, t)
	for _, target := range []string{pod.Name, "cloneset/web"} {
		// The working copy runs the sidecar's image at version 1; the idle one the empty image at 0.
		out, stderr, code := run("-n", ns, "exec", target, "-S", "mesh", "--", "sh", "-c", "echo $SIDECARSET_VERSION")
		if code != 0 || out != "1\n" || !strings.Contains(stderr, "Enter working container "+working["mesh"]+" of SidecarSet.") {
			t.Errorf("exec %s -S mesh: exit %d, stdout %q, stderr %q; want version 1 from %s", target, code, out, stderr, working["mesh"])
		}
	}
	_, stderr, code := run("-n", ns, "exec", pod.Name, "-S", "nope", "--", "true")
	if code == 0 || !strings.Contains(stderr, "its hot-upgrade sidecars are mesh") {
		t.Errorf("exec -S nope: exit %d, stderr %q; want the pod's hot-upgrade sidecars named", code, stderr)
	}
}
