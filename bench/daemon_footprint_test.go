//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// The daemon footprint benchmark: the node daemon's memory, CPU and API requests while idle on a
// node with footprintPods running pods and footprintTags NodeImage tags (BENCHMARKS.md, "Daemon
// footprint"). Targets from the issue: RSS ≤ 30 MiB, ~0 CPU, no LIST after start.
var (
	footprintNode   = envStr("BENCH_NODE", "vm")
	footprintPods   = envInt("BENCH_FOOTPRINT_PODS", 100)
	footprintTags   = envInt("BENCH_FOOTPRINT_TAGS", 256)
	footprintSettle = time.Duration(envInt("BENCH_FOOTPRINT_SETTLE_SECONDS", 30)) * time.Second
	footprintIdle   = time.Duration(envInt("BENCH_FOOTPRINT_IDLE_SECONDS", 60)) * time.Second
	// Targets; the RSS one is in MiB, the CPU one in hundredths of a percent of one core.
	targetRSSMiB   = envInt("BENCH_FOOTPRINT_RSS_MIB", 30)
	targetCPUCenti = envInt("BENCH_FOOTPRINT_CPU_CENTIPERCENT", 100)
)

const (
	daemonNamespace = "kruise-system"
	daemonUser      = "system:serviceaccount:kruise-system:kruise-daemon"
	daemonComm      = "kruise-daemon"
)

func TestDaemonFootprint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	e := connect(ctx, t, "bench-footprint", "bench-daemon")

	daemon := daemonPodOn(ctx, t, e, footprintNode)
	ready := podCondition(daemon, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		t.Fatalf("daemon pod %s on %s is not Ready", daemon.Name, footprintNode)
	}
	// "After start" is after the daemon pod became Ready: its /readyz passes only once the
	// node, CRR, NodeImage and pull-secret informers have synced, so their initial LISTs are done.
	readyAt := ready.LastTransitionTime.Time
	pid, err := findPodProcess(daemonComm, daemon.Name)
	if err != nil {
		t.Fatal(err)
	}
	before, err := readMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("daemon pod %s (pid %d), Ready since %s; before the load: %s", daemon.Name, pid,
		readyAt.Format(time.RFC3339), before)

	e.createFootprintPods(ctx, t)
	e.loadNodeImage(ctx, t)

	// Let what the load set off (status writes, Events, GC of the burst's garbage) finish.
	t.Logf("load in place; settling for %s", footprintSettle)
	select {
	case <-time.After(footprintSettle):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}

	// The idle window: sample the process every 5 s.
	start, err := sampleProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	startMem, err := readMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	peak := startMem
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	deadline := start.at.Add(footprintIdle)
	for time.Now().Before(deadline) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		m, err := readMemory(pid)
		if err != nil {
			t.Fatalf("daemon process %d went away during the idle window: %v", pid, err)
		}
		if m.rss > peak.rss {
			peak = m
		}
	}
	end, err := sampleProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	endMem, err := readMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	if now := daemonPodOn(ctx, t, e, footprintNode); now.UID != daemon.UID {
		t.Fatalf("the daemon pod changed during the benchmark (%s -> %s): redeployed?", daemon.Name, now.Name)
	}
	cpu := cpuPercent(start, end)

	// The daemon's requests, from the audit log: its service account's, made with the token
	// bound to this pod (simulated daemons of other benchmarks share the account).
	ofPod := byUser(daemonUser)
	all, err := auditRequests(readyAt.Add(-time.Second), end.at, func(ev *auditEvent) bool {
		pod := ev.User.Extra["authentication.kubernetes.io/pod-name"]
		return ofPod(ev) && len(pod) == 1 && pod[0] == daemon.Name
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Ready condition's time has whole seconds: requests in the second
	// the pod became Ready (the informers' initial LISTs end just before
	// /readyz passes) belong to the start.
	afterStart := readyAt.Add(time.Second)
	var afterReady, idle []auditEvent
	for _, ev := range all {
		if !ev.RequestReceived.Before(afterStart) {
			afterReady = append(afterReady, ev)
		}
		if !ev.RequestReceived.Before(start.at) {
			idle = append(idle, ev)
		}
	}
	lists := []string{}
	for _, ev := range afterReady {
		if ev.Verb == "list" {
			lists = append(lists, ev.RequestReceived.Format(time.RFC3339)+" "+ev.RequestURI)
		}
	}
	minutes := end.at.Sub(start.at).Minutes()
	perMinute := countBy(idle, func(ev *auditEvent) string { return ev.Verb + " " + ev.Resource() })

	t.Logf("idle window %s (%s .. %s), %d pods on %s, %d NodeImage tags",
		end.at.Sub(start.at).Round(time.Second), start.at.Format(time.TimeOnly), end.at.Format(time.TimeOnly),
		footprintPods, footprintNode, footprintTags)
	t.Logf("RSS at start of window: %s", startMem)
	t.Logf("RSS at end of window:   %s", endMem)
	t.Logf("RSS peak in window:     %s; VmHWM (peak since start) %s", peak, mib(end.hwm))
	t.Logf("CPU over the window: %.2f%% of one core (%s in %s)", cpu, end.cpu-start.cpu, end.at.Sub(start.at).Round(time.Second))
	t.Logf("requests by %s after the second it became Ready (%s): %d, of which list: %d", daemonUser, readyAt.Format(time.RFC3339), len(afterReady), len(lists))
	keys := make([]string, 0, len(perMinute))
	for k := range perMinute {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("  idle window: %-45s %5.1f /min", k, float64(perMinute[k])/minutes)
	}
	writes := 0
	for _, ev := range idle {
		switch ev.Verb {
		case "create", "update", "patch", "delete":
			writes++
		}
	}
	t.Logf("  idle window: writes %.1f /min, watches (re)started %.1f /min", float64(writes)/minutes,
		float64(countBy(idle, func(ev *auditEvent) string { return ev.Verb })["watch"])/minutes)

	if len(lists) > 0 {
		t.Errorf("the daemon listed after it became Ready (target: watches only):\n  %s", strings.Join(lists, "\n  "))
	}
	if max := int64(targetRSSMiB) << 20; endMem.rss > max || peak.rss > max {
		t.Errorf("daemon RSS %s (peak %s in the idle window) is over the target %d MiB", mib(endMem.rss), mib(peak.rss), targetRSSMiB)
	}
	if limit := float64(targetCPUCenti) / 100; cpu > limit {
		t.Errorf("daemon CPU %.2f%% of a core while idle is over the target %.2f%%", cpu, limit)
	}
}

// memory is a reading of a process's resident memory, in bytes.
type memory struct{ rss, anon, file int64 }

func (m memory) String() string {
	return fmt.Sprintf("VmRSS %s = RssAnon %s + RssFile %s", mib(m.rss), mib(m.anon), mib(m.file))
}

// readMemory reads VmRSS, RssAnon and RssFile (+ RssShmem, none for the daemon) of pid.
func readMemory(pid int) (memory, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parsing %s of /proc/%d/status: %w", k, pid, err)
		}
		*dst = kb << 10
	}
	if m.rss == 0 {
		return memory{}, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// daemonPodOn returns the running kruise-daemon pod on node.
func daemonPodOn(ctx context.Context, t *testing.T, e *env, node string) *corev1.Pod {
	t.Helper()
	pods, err := e.client.CoreV1().Pods(daemonNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Name, "kruise-daemon-") {
			return p
		}
	}
	t.Fatalf("no running kruise-daemon pod on node %s", node)
	return nil
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// createFootprintPods creates footprintPods small sleeping pods on the node (in the benchmark's
// namespace, deleted with it) and waits until all are Ready.
func (e *env) createFootprintPods(ctx context.Context, t *testing.T) {
	t.Helper()
	node, err := e.client.CoreV1().Nodes().Get(ctx, footprintNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	maxPods := node.Status.Allocatable.Pods().Value()
	// Pods of an earlier run may still be terminating (its namespace was just deleted): they
	// hold their slots until they are gone, so wait for room rather than fail.
	active := 0
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		onNode, err := e.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + footprintNode})
		if err != nil {
			return false, err
		}
		active = 0
		for _, p := range onNode.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				active++
			}
		}
		return int64(active+footprintPods) <= maxPods, nil
	})
	if err != nil {
		t.Fatalf("node %s runs %d pods and allows %d: no room for %d more (BENCH_FOOTPRINT_PODS): %v", footprintNode, active, maxPods, footprintPods, err)
	}
	t.Logf("creating %d pods on %s (%d running there now, max-pods %d)", footprintPods, footprintNode, active, maxPods)
	for i := range footprintPods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%03d", i), Labels: map[string]string{"bench": "footprint"}},
			Spec: corev1.PodSpec{
				NodeName:                      footprintNode,
				TerminationGracePeriodSeconds: ptr.To(int64(1)),
				AutomountServiceAccountToken:  ptr.To(false),
				Containers: []corev1.Container{{
					Name: "sleep", Image: image, Command: []string{"sleep", "86400"},
					ImagePullPolicy: corev1.PullIfNotPresent,
				}},
			},
		}
		if _, err := e.client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace's deletion (connect's cleanup) deletes the pods.
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "bench=footprint"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for i := range pods.Items {
			if c := podCondition(&pods.Items[i], corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == footprintPods, nil
	}); err != nil {
		t.Fatalf("waiting for %d pods Ready: %v", footprintPods, err)
	}
	t.Logf("%d pods Ready", footprintPods)
}

// loadNodeImage pushes footprintTags tiny distinct images as tags of one new repository of the
// loopback registry, puts them all in the node's NodeImage spec and waits until every one is
// Succeeded in its status. The cleanup takes the repository out of the spec and removes the images
// from the runtime.
func (e *env) loadNodeImage(ctx context.Context, t *testing.T) {
	t.Helper()
	repo := pullRegistry + "/public/bench-footprint-" + rand.String(6)
	tags := make([]appsv1beta1.ImageTagSpec, 0, footprintTags)
	for i := range footprintTags {
		tag := fmt.Sprintf("t%03d", i)
		ref, err := name.ParseReference(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			t.Fatalf("pushing %s: %v", ref, err)
		}
		tags = append(tags, appsv1beta1.ImageTagSpec{Tag: tag, CreatedAt: ptr.To(metav1.Now())})
	}
	t.Logf("pushed %d tags of %s", footprintTags, repo)

	patch := func(ctx context.Context, spec any) error {
		body, err := json.Marshal(map[string]any{"spec": map[string]any{"images": map[string]any{repo: spec}}})
		if err != nil {
			return err
		}
		_, err = e.kruise.AppsV1beta1().NodeImages().Patch(ctx, footprintNode, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// A null in a merge patch removes only this repository's key.
		if err := patch(cctx, nil); err != nil {
			t.Errorf("removing %s from NodeImage %s: %v", repo, footprintNode, err)
		}
		for _, tag := range tags {
			if err := e.rt.RemoveImage(cctx, repo+":"+tag.Tag); err != nil {
				t.Logf("removing image %s:%s: %v", repo, tag.Tag, err)
			}
		}
	})
	if err := patch(ctx, appsv1beta1.ImageSpec{Tags: tags}); err != nil {
		t.Fatalf("adding %d tags to NodeImage %s: %v", footprintTags, footprintNode, err)
	}
	began := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		ni, err := e.kruise.AppsV1beta1().NodeImages().Get(ctx, footprintNode, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		succeeded := 0
		for _, s := range ni.Status.ImageStatuses[repo].Tags {
			if s.Phase == appsv1beta1.ImagePhaseSucceeded {
				succeeded++
			}
		}
		return succeeded == footprintTags, nil
	}); err != nil {
		t.Fatalf("waiting for %d tags of %s Succeeded in NodeImage %s: %v", footprintTags, repo, footprintNode, err)
	}
	t.Logf("all %d tags Succeeded in %s", footprintTags, time.Since(began).Round(time.Second))
}
