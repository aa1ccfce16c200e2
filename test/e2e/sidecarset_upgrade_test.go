//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller/sidecarset"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// sidecarSetTimeout bounds one rolling upgrade of a few pods (new images are pulled from the
// loopback registry; each pod restarts two sidecars).
const sidecarSetTimeout = 3 * time.Minute

// upgradeSidecarSet is a SidecarSet named name selecting the pods labelled app=name in namespace
// ns only (SidecarSets are cluster-scoped; a test must not touch another test's pods), with a
// regular sidecar "agent" and a native sidecar "proxy" (an init container with restartPolicy
// Always), both busybox. It is deleted when the test ends.
func upgradeSidecarSet(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string,
	mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	t.Helper()
	sleeperContainer := func(n string) corev1.Container {
		return corev1.Container{Name: n, Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", sleeper}}
	}
	proxy := sleeperContainer("proxy")
	proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers:        []appsv1beta1.SidecarContainer{{Container: sleeperContainer("agent")}},
			InitContainers:    []appsv1beta1.SidecarContainer{{Container: proxy}},
		},
	}
	for _, m := range mods {
		m(ss)
	}
	created, err := kc.AppsV1beta1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating SidecarSet %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = kc.AppsV1beta1().SidecarSets().Delete(ctx, name, metav1.DeleteOptions{})
	})
	waitInjects(ctx, t, f, ns, ss.Spec.Selector.MatchLabels, "agent")
	return created
}

// injectedPods creates n bare busybox pods (container "main") labelled app=name, waits until
// each runs with the SidecarSet's sidecars injected and is Ready, and returns them by name.
func injectedPods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, n int) map[string]corev1.Pod {
	t.Helper()
	for i := range n {
		pod := f.BusyboxPod(ns, fmt.Sprintf("%s-%d", name, i), "main")
		pod.Labels = map[string]string{"app": name}
		// Not CreateRunningPod: it expects the containers the pod was created with, and the
		// webhook adds the sidecars; the wait below checks them all.
		if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", pod.Name, err)
		}
	}
	framework.WaitFor(ctx, t, sidecarSetTimeout, fmt.Sprintf("%d pods with agent and proxy injected, Ready", n), func(ctx context.Context) (bool, string, error) {
		var ready []string
		for _, p := range clonePods(ctx, t, f, ns, name) {
			if framework.ContainerSpecOf(&p, "agent") == nil || framework.InitContainerSpecOf(&p, "proxy") == nil {
				t.Fatalf("pod %s was not injected (containers %v): the SidecarSet injection webhook must be serving", p.Name, podContainerNames(&p))
			}
			if podReady(&p) {
				ready = append(ready, p.Name)
			}
		}
		return len(ready) == n, fmt.Sprintf("ready: %v", ready), nil
	})
	out := map[string]corev1.Pod{}
	for _, p := range clonePods(ctx, t, f, ns, name) {
		out[p.Name] = p
	}
	return out
}

func podContainerNames(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.InitContainers {
		out = append(out, "init:"+c.Name)
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// sidecarsAt reports whether both sidecars of pod run image: spec and status, Ready.
func sidecarsAt(pod *corev1.Pod, image string) bool {
	agent, proxy := framework.ContainerStatusOf(pod, "agent"), framework.InitContainerStatusOf(pod, "proxy")
	return framework.ContainerSpecOf(pod, "agent").Image == image && framework.InitContainerSpecOf(pod, "proxy").Image == image &&
		agent != nil && agent.Image == image && agent.Ready && proxy != nil && proxy.Image == image && proxy.Ready
}

// unavailable names the pods that are not Ready, or whose sidecars' spec is at image while a
// sidecar still runs the container it ran before (before: the pods by name): what maxUnavailable
// bounds. Container IDs, not the status' image names, tell a restart: the runtime may report a
// container's image by another name of the same image.
func unavailable(pods []corev1.Pod, before map[string]corev1.Pod, image string) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		agent, proxy := framework.ContainerStatusOf(p, "agent"), framework.InitContainerStatusOf(p, "proxy")
		old := before[p.Name]
		oldAgent, oldProxy := framework.ContainerStatusOf(&old, "agent"), framework.InitContainerStatusOf(&old, "proxy")
		restarting := framework.ContainerSpecOf(p, "agent").Image == image &&
			(agent == nil || oldAgent == nil || agent.ContainerID == oldAgent.ContainerID ||
				proxy == nil || oldProxy == nil || proxy.ContainerID == oldProxy.ContainerID)
		if !podReady(p) || agent == nil || proxy == nil || !agent.Ready || !proxy.Ready || restarting {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// setSidecarImages points both sidecars of SidecarSet name at image.
func setSidecarImages(ctx context.Context, t *testing.T, kc versioned.Interface, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/containers/0/image","value":%q},{"op":"replace","path":"/spec/initContainers/0/image","value":%q}]`, image, image)
	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the sidecar images of SidecarSet %s: %v", name, err)
	}
}

// waitSidecarSetStatus waits until SidecarSet name has observed its generation and check holds
// on its status.
func waitSidecarSetStatus(ctx context.Context, t *testing.T, kc versioned.Interface, name, desc string, check func(appsv1beta1.SidecarSetStatus) bool) *appsv1beta1.SidecarSet {
	t.Helper()
	var ss *appsv1beta1.SidecarSet
	framework.WaitFor(ctx, t, sidecarSetTimeout, fmt.Sprintf("SidecarSet %s %s", name, desc), func(ctx context.Context) (bool, string, error) {
		var err error
		if ss, err = kc.AppsV1beta1().SidecarSets().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		return ss.Status.ObservedGeneration == ss.Generation && check(ss.Status), fmt.Sprintf("status %+v", ss.Status), nil
	})
	return ss
}

// An image change of a regular and of a native sidecar is rolled out in place, one pod at a time
// (maxUnavailable 1): every pod keeps its UID and IP, its app container is never restarted (same
// container ID, restartCount 0), both sidecars run the new image, and the status counts every pod
// updated and ready at the latest revision.
func TestSidecarSetUpgradesImagesInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	if m := f.ServerMinor(t); m < 31 {
		t.Skipf("a Kubernetes 1.%d kubelet does not restart a running native sidecar whose image changed (1.31 and later do), so its image cannot change in place; docs/operations.md, \"Supported Kubernetes versions\"", m)
	}
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "ssup")
	name := ns + "-sc"
	upgradeSidecarSet(ctx, t, f, kc, ns, name)
	before := injectedPods(ctx, t, f, ns, name, 3)
	waitSidecarSetStatus(ctx, t, kc, name, "counting 3 pods", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedPods == 3 && s.ReadyPods == 3 && s.LatestRevision != ""
	})

	variant := f.BusyboxVariant(t)
	setSidecarImages(ctx, t, kc, name, variant)
	maxSeen := 0
	framework.WaitFor(ctx, t, sidecarSetTimeout, "every pod's sidecars at the new image", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, name)
		down := unavailable(pods, before, variant)
		maxSeen = max(maxSeen, len(down))
		if len(down) > 1 {
			t.Errorf("pods %v unavailable at once: maxUnavailable is 1", down)
		}
		var at []string
		for i := range pods {
			if sidecarsAt(&pods[i], variant) {
				at = append(at, pods[i].Name)
			}
		}
		return len(at) == 3, fmt.Sprintf("at the new image: %v; unavailable: %v", at, down), nil
	})
	if maxSeen == 0 {
		t.Logf("no pod was seen unavailable: the restarts were quicker than the polls")
	}
	ss := waitSidecarSetStatus(ctx, t, kc, name, "with every pod updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedPods == 3 && s.ReadyPods == 3 && s.UpdatedReadyPods == 3
	})

	for _, p := range clonePods(ctx, t, f, ns, name) {
		old := before[p.Name]
		if p.UID != old.UID || p.Status.PodIP != old.Status.PodIP {
			t.Errorf("pod %s (uid %s, IP %s) was %s at %s: an in-place upgrade keeps the pod", p.Name, p.UID, p.Status.PodIP, old.UID, old.Status.PodIP)
		}
		app, oldApp := framework.ContainerStatusOf(&p, "main"), framework.ContainerStatusOf(&old, "main")
		if app == nil || app.ContainerID != oldApp.ContainerID || app.RestartCount != 0 {
			t.Errorf("pod %s: app container %s, was %s: it must not be restarted", p.Name, framework.DescribeContainerStatus(app), framework.DescribeContainerStatus(oldApp))
		}
		for _, c := range []struct {
			name     string
			now, was *corev1.ContainerStatus
		}{
			{"agent", framework.ContainerStatusOf(&p, "agent"), framework.ContainerStatusOf(&old, "agent")},
			{"proxy", framework.InitContainerStatusOf(&p, "proxy"), framework.InitContainerStatusOf(&old, "proxy")},
		} {
			if c.now == nil || c.was == nil || c.now.ContainerID == c.was.ContainerID {
				t.Errorf("pod %s: sidecar %s was not restarted in place (%v, was %v)", p.Name, c.name, c.now, c.was)
			}
		}
		var states map[string]json.RawMessage
		if err := json.Unmarshal([]byte(p.Annotations["kruise.io/sidecarset-inplace-update-state"]), &states); err != nil || states[name] == nil {
			t.Errorf("pod %s: no in-place update state of %s: %v (%q)", p.Name, name, err, p.Annotations["kruise.io/sidecarset-inplace-update-state"])
		}
		if !strings.Contains(p.Annotations["kruise.io/sidecarset-hash"], ss.Status.LatestRevision) {
			t.Errorf("pod %s: hash annotation %s does not name the latest revision %s", p.Name, p.Annotations["kruise.io/sidecarset-hash"], ss.Status.LatestRevision)
		}
		want := fmt.Sprintf(`True %s {"%s":true}`, sidecarset.ReasonAllUpgradable, name)
		if c := framework.PodConditionOf(&p, sidecarset.UpgradableCondition); c == nil || string(c.Status)+" "+c.Reason+" "+c.Message != want {
			t.Errorf("pod %s: condition %s is %+v, want %s", p.Name, sidecarset.UpgradableCondition, c, want)
		}
	}
}

// partition keeps pods at the old version (2 of 3: one pod upgraded, and no more however long
// one waits); lowered to 0 it lets the rest through.
func TestSidecarSetUpgradePartition(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "sspart")
	name := ns + "-sc"
	upgradeSidecarSet(ctx, t, f, kc, ns, name, func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
		ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	})
	injectedPods(ctx, t, f, ns, name, 3)

	variant := f.BusyboxVariant(t)
	setSidecarImages(ctx, t, kc, name, variant)
	waitSidecarSetStatus(ctx, t, kc, name, "with one pod updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedPods == 1 && s.UpdatedReadyPods == 1
	})
	framework.Consistently(ctx, t, 10*time.Second, "no more than one pod upgraded under partition 2", func(ctx context.Context) (bool, string, error) {
		var at []string
		for _, p := range clonePods(ctx, t, f, ns, name) {
			if framework.ContainerSpecOf(&p, "agent").Image == variant {
				at = append(at, p.Name)
			}
		}
		return len(at) <= 1, fmt.Sprintf("at the new image: %v", at), nil
	})

	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, name, types.MergePatchType,
		[]byte(`{"spec":{"updateStrategy":{"partition":0}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("lowering the partition: %v", err)
	}
	waitSidecarSetStatus(ctx, t, kc, name, "with every pod updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedPods == 3 && s.UpdatedReadyPods == 3
	})
	for _, p := range clonePods(ctx, t, f, ns, name) {
		if !sidecarsAt(&p, variant) {
			t.Errorf("pod %s: sidecars not at %s: %v", p.Name, variant, p.Status.ContainerStatuses)
		}
	}
}

// A change beyond images (an env var of the sidecar) cannot be applied in place: no pod is
// touched, the status counts them not updated, and the SidecarSet gets a NotUpgradable Event
// naming them (never silent, OpenKruise #1272).
func TestSidecarSetReportsChangesItCannotApplyInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "ssnot")
	name := ns + "-sc"
	upgradeSidecarSet(ctx, t, f, kc, ns, name)
	before := injectedPods(ctx, t, f, ns, name, 2)

	patch := `[{"op":"add","path":"/spec/containers/0/env","value":[{"name":"LEVEL","value":"debug"}]}]`
	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("adding an env var to the sidecar: %v", err)
	}
	waitSidecarSetStatus(ctx, t, kc, name, "counting both pods not updated", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 0 && s.ReadyPods == 2
	})
	framework.WaitFor(ctx, t, sidecarSetTimeout, "a NotUpgradable Event on the SidecarSet", func(ctx context.Context) (bool, string, error) {
		events, err := f.ObjectEvents(ctx, "", "SidecarSet", name)
		if err != nil {
			return false, "", err
		}
		ok, desc := framework.HasEvent(events, sidecarset.EventReasonNotUpgradable, ns+"/"+name+"-0", ns+"/"+name+"-1")
		return ok, desc, nil
	})
	// Each pod carries OpenKruise's condition saying so.
	wantCond := fmt.Sprintf(`False %s {"%s":false}`, sidecarset.ReasonNotUpgradable, name)
	framework.WaitFor(ctx, t, sidecarSetTimeout, "condition "+string(sidecarset.UpgradableCondition)+" on both pods", func(ctx context.Context) (bool, string, error) {
		var got []string
		for _, p := range clonePods(ctx, t, f, ns, name) {
			if c := framework.PodConditionOf(&p, sidecarset.UpgradableCondition); c != nil {
				got = append(got, string(c.Status)+" "+c.Reason+" "+c.Message)
			}
		}
		return len(got) == 2 && got[0] == wantCond && got[1] == wantCond, fmt.Sprintf("conditions %q, want %q on both", got, wantCond), nil
	})
	for _, p := range clonePods(ctx, t, f, ns, name) {
		old := before[p.Name]
		agent, was := framework.ContainerStatusOf(&p, "agent"), framework.ContainerStatusOf(&old, "agent")
		if p.UID != old.UID || agent == nil || agent.ContainerID != was.ContainerID {
			t.Errorf("pod %s was touched: uid %s (was %s), agent %s (was %s)", p.Name, p.UID, old.UID,
				framework.DescribeContainerStatus(agent), framework.DescribeContainerStatus(was))
		}
	}
}
