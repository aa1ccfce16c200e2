//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller/sidecarset"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The hot-upgrade keys, spelled out rather than imported so that a renamed constant fails here.
const (
	workingCopyAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	versionAnnotation     = "version.sidecarset.kruise.io/"
	versionAltAnnotation  = "versionalt.sidecarset.kruise.io/"
)

// A HotUpgrade sidecar "mesh" is injected into a Deployment's pod as mesh-1 (working, its image)
// and mesh-2 (idle, the empty image); an image change of the SidecarSet starts the new image in
// mesh-2, hands over, then puts mesh-1 on the empty image. The pod keeps its UID, the app
// container is never restarted, a copy of the sidecar runs at every moment, and the working
// annotation and versions move as OpenKruise moves them.
func TestSidecarSetHotUpgrade(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 7*time.Minute)
	ns := f.NewNamespace(ctx, t, "sshot")
	name := "hot-" + rand.String(5)
	podLabels := map[string]string{"app": "web", "sidecarset": name}
	busybox, empty := f.Image("public/busybox:1.35"), f.EmptySidecarImage(t)
	hotSidecarSet(ctx, t, f, ns, name, busybox, empty)
	waitScoped(ctx, t, f, ns)
	app := corev1.Container{Name: "app", Image: busybox, Command: []string{"sh", "-c", sleeper}}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", podLabels, app), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	before := onlyPod(ctx, t, f, ns, podLabels)
	if got := containerNames(before.Spec.Containers); strings.Join(got, ",") != "mesh-1,mesh-2,app" {
		t.Fatalf("containers %v, want mesh-1, mesh-2 (HotUpgrade copies) before app", got)
	}
	checkCopies(t, before, "mesh-1", busybox, empty, map[string]string{
		versionAnnotation + "mesh-1": "1", versionAltAnnotation + "mesh-1": "0",
		versionAnnotation + "mesh-2": "0", versionAltAnnotation + "mesh-2": "1",
	})
	waitSidecarSetStatus(ctx, t, kc, name, "counting the pod", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 1 && s.UpdatedPods == 1 && s.ReadyPods == 1
	})

	variant := f.BusyboxVariant(t)
	setHotImage(ctx, t, kc, name, variant)
	var after *corev1.Pod
	var notReadySeen []string
	framework.WaitFor(ctx, t, sidecarSetTimeout, "mesh-2 working at the new image, mesh-1 back on the empty image", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		one, two := framework.ContainerStatusOf(p, "mesh-1"), framework.ContainerStatusOf(p, "mesh-2")
		oneWorks := one != nil && one.State.Running != nil && framework.ContainerSpecOf(p, "mesh-1").Image == busybox
		twoWorks := two != nil && two.State.Running != nil && two.Ready && framework.ContainerSpecOf(p, "mesh-2").Image == variant
		if !oneWorks && !twoWorks {
			t.Errorf("no copy of the sidecar runs its image: %s", framework.DescribeSidecarPod(p))
		}
		if !podReady(p) {
			notReadySeen = append(notReadySeen, framework.DescribeSidecarPod(p))
		}
		after = p
		done := twoWorks && framework.ContainerSpecOf(p, "mesh-1").Image == empty && one != nil && one.Ready &&
			one.ContainerID != framework.ContainerStatusOf(before, "mesh-1").ContainerID
		return done, framework.DescribeSidecarPod(p), nil
	})
	if len(notReadySeen) > 0 {
		// OpenKruise does not hold the pod Ready either: the kubelet restarting a copy makes the
		// pod NotReady until it runs again.
		t.Logf("the pod was seen NotReady %d time(s) while a copy restarted, first: %s", len(notReadySeen), notReadySeen[0])
	}

	ss := waitSidecarSetStatus(ctx, t, kc, name, "with the pod updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 1 && s.UpdatedPods == 1 && s.ReadyPods == 1 && s.UpdatedReadyPods == 1
	})
	after = onlyPod(ctx, t, f, ns, podLabels)
	if after.UID != before.UID {
		t.Errorf("pod %s is a new pod (uid %s, was %s): a hot upgrade keeps the pod", after.Name, after.UID, before.UID)
	}
	appNow, appWas := framework.ContainerStatusOf(after, "app"), framework.ContainerStatusOf(before, "app")
	if appNow == nil || appNow.ContainerID != appWas.ContainerID || appNow.RestartCount != 0 {
		t.Errorf("app container %s, was %s: it must not be restarted",
			framework.DescribeContainerStatus(appNow), framework.DescribeContainerStatus(appWas))
	}
	version := after.Annotations[versionAnnotation+"mesh-2"]
	if version == "" || version == "0" || version == "1" {
		t.Errorf("mesh-2 version %q: want the SidecarSet's resourceVersion at the upgrade", version)
	}
	checkCopies(t, after, "mesh-2", variant, empty, map[string]string{
		versionAnnotation + "mesh-2": version, versionAltAnnotation + "mesh-2": "0",
		versionAnnotation + "mesh-1": "0", versionAltAnnotation + "mesh-1": version,
	})
	if !strings.Contains(after.Annotations["kruise.io/sidecarset-hash"], ss.Status.LatestRevision) {
		t.Errorf("hash annotation %s does not name the latest revision %s", after.Annotations["kruise.io/sidecarset-hash"], ss.Status.LatestRevision)
	}
	events, err := f.ObjectEvents(ctx, "", "SidecarSet", name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, desc := framework.HasEvent(events, sidecarset.EventReasonHotUpgradeFlipped, ns+"/"+after.Name); !ok {
		t.Errorf("no %s Event naming the pod: %s", sidecarset.EventReasonHotUpgradeFlipped, desc)
	}
}

// checkCopies checks that working runs image and the other copy of mesh the empty image, by spec
// and annotation, and the version annotations.
func checkCopies(t *testing.T, pod *corev1.Pod, working, image, empty string, versions map[string]string) {
	t.Helper()
	idle := "mesh-1"
	if working == idle {
		idle = "mesh-2"
	}
	if got := pod.Annotations[workingCopyAnnotation]; got != `{"mesh":"`+working+`"}` {
		t.Errorf("%s = %s, want mesh working as %s", workingCopyAnnotation, got, working)
	}
	if got := framework.ContainerSpecOf(pod, working).Image; got != image {
		t.Errorf("working copy %s image %s, want %s", working, got, image)
	}
	if got := framework.ContainerSpecOf(pod, idle).Image; got != empty {
		t.Errorf("idle copy %s image %s, want the empty image %s", idle, got, empty)
	}
	for k, v := range versions {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
		}
	}
}

// hotSidecarSet creates SidecarSet name with HotUpgrade sidecar "mesh" at image (empty: its
// empty image), selecting the pods labelled sidecarset=name in namespace ns.
func hotSidecarSet(ctx context.Context, t *testing.T, f *framework.Framework, ns, name, image, empty string) {
	t.Helper()
	script := "echo version=$SIDECARSET_VERSION alt=$SIDECARSET_VERSION_ALT; " + sleeper
	createSidecarSet(ctx, t, f, &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"sidecarset": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []appsv1beta1.SidecarContainer{{
				// args, not command: the empty image's entrypoint ignores them.
				Container: corev1.Container{Name: "mesh", Image: image, Args: []string{"sh", "-c", script}},
				UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{
					UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: empty},
			}},
		},
	})
}

// A new image that cannot be pulled stops the first pod at its first step, reported by a
// HotUpgradeBlocked Event: its old copy keeps working, the second pod is not touched
// (maxUnavailable 1), and nothing loops; an image that works then finishes both pods.
func TestSidecarSetHotUpgradeFailedImage(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 7*time.Minute)
	ns := f.NewNamespace(ctx, t, "sshotbad")
	name := "hotbad-" + rand.String(5)
	podLabels := map[string]string{"app": "web", "sidecarset": name}
	busybox, empty := f.Image("public/busybox:1.35"), f.EmptySidecarImage(t)
	hotSidecarSet(ctx, t, f, ns, name, busybox, empty)
	waitScoped(ctx, t, f, ns)
	app := corev1.Container{Name: "app", Image: busybox, Command: []string{"sh", "-c", sleeper}}
	d := deployment(ns, "web", podLabels, app)
	d.Spec.Replicas = ptr.To[int32](2)
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	waitSidecarSetStatus(ctx, t, kc, name, "counting both pods ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 2 && s.ReadyPods == 2
	})
	before := map[string]corev1.Pod{}
	for _, p := range podsLabelled(ctx, t, f, ns, podLabels) {
		before[p.Name] = p
	}

	bad := f.Image("public/busybox:no-such-tag-" + rand.String(5))
	setHotImage(ctx, t, kc, name, bad)
	waitSidecarSetStatus(ctx, t, kc, name, "with one pod stuck on the bad image", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 1 && s.ReadyPods == 1 && s.UpdatedReadyPods == 0
	})
	framework.WaitFor(ctx, t, sidecarSetTimeout, "a HotUpgradeBlocked Event", func(ctx context.Context) (bool, string, error) {
		events, err := f.ObjectEvents(ctx, "", "SidecarSet", name)
		if err != nil {
			return false, "", err
		}
		ok, desc := framework.HasEvent(events, sidecarset.EventReasonHotUpgradeBlocked, ns+"/")
		return ok, desc, nil
	})
	framework.Consistently(ctx, t, 10*time.Second, "the second pod left alone, the stuck pod's old copy working", func(ctx context.Context) (bool, string, error) {
		var stuck, untouched []string
		for _, p := range podsLabelled(ctx, t, f, ns, podLabels) {
			was := before[p.Name]
			one, oneWas := framework.ContainerStatusOf(&p, "mesh-1"), framework.ContainerStatusOf(&was, "mesh-1")
			if one == nil || oneWas == nil || one.ContainerID != oneWas.ContainerID || one.State.Running == nil {
				return false, "", fmt.Errorf("pod %s: the working copy mesh-1 was stopped: %s", p.Name, framework.DescribeSidecarPod(&p))
			}
			switch framework.ContainerSpecOf(&p, "mesh-2").Image {
			case bad:
				stuck = append(stuck, p.Name)
			case empty:
				untouched = append(untouched, p.Name)
			}
		}
		return len(stuck) == 1 && len(untouched) == 1, fmt.Sprintf("stuck %v, untouched %v", stuck, untouched), nil
	})

	variant := f.BusyboxVariant(t)
	setHotImage(ctx, t, kc, name, variant)
	waitSidecarSetStatus(ctx, t, kc, name, "with both pods updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 2 && s.ReadyPods == 2 && s.UpdatedReadyPods == 2
	})
	for _, p := range podsLabelled(ctx, t, f, ns, podLabels) {
		was := before[p.Name]
		if p.UID != was.UID {
			t.Errorf("pod %s was recreated", p.Name)
		}
		checkCopies(t, &p, "mesh-2", variant, empty, map[string]string{versionAnnotation + "mesh-1": "0", versionAltAnnotation + "mesh-2": "0"})
		app, appWas := framework.ContainerStatusOf(&p, "app"), framework.ContainerStatusOf(&was, "app")
		if app == nil || app.ContainerID != appWas.ContainerID || app.RestartCount != 0 {
			t.Errorf("pod %s: app container %s, was %s: it must not be restarted", p.Name,
				framework.DescribeContainerStatus(app), framework.DescribeContainerStatus(appWas))
		}
	}
}

func podsLabelled(ctx context.Context, t *testing.T, f *framework.Framework, ns string, podLabels map[string]string) []corev1.Pod {
	t.Helper()
	list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(podLabels).String()})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return list.Items
}

// setHotImage points sidecar mesh of SidecarSet name at image.
func setHotImage(ctx context.Context, t *testing.T, kc versioned.Interface, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/containers/0/image","value":%q}]`, image)
	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the sidecar image: %v", err)
	}
}
