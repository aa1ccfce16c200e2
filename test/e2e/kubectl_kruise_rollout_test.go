//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// inPlaceCloneSet is CloneSet web of 3 busybox pods updated in place one at a time.
func inPlaceCloneSet(f *framework.Framework, ns string) *appsv1alpha1.CloneSet {
	cs := busyboxCloneSet(f, ns, "web", 3, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	return cs
}

// Piped, `rollout status -w` follows an in-place rollout with one line per change, counts rising,
// and exits 0 once every pod is updated and ready.
func TestKubectlKruiseRolloutStatusPiped(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-status")
	variant := f.BusyboxVariant(t)

	createCloneSet(ctx, t, kc, inPlaceCloneSet(f, ns))
	waitPodsSettled(ctx, t, f, kc, ns, "web", 3)
	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))

	out, err := plugin.Run(ctx, "-n", ns, "rollout", "status", "-w", "cloneset/web", "--timeout=3m")
	if err != nil {
		t.Fatalf("rollout status -w: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; last != `CloneSet "web" successfully rolled out` {
		t.Errorf("last line %q, want the success line; all:\n%s", last, out)
	}
	progress := 0
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, `Waiting for CloneSet "web"`) {
			t.Errorf("line %q is not a progress line", l)
		}
		if strings.Contains(l, " of 3 updated") {
			progress++
		}
	}
	if progress < 2 {
		t.Errorf("%d progress lines with counts, want the rollout followed change by change:\n%s", progress, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("piped output has terminal escapes:\n%q", out)
	}
	cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || cs.Status.UpdatedReadyReplicas != 3 {
		t.Errorf("after status exited 0: %v, status %+v; want 3 updated and ready", err, cs.Status)
	}
}

// A rollout to an image the registry does not have passes progressDeadlineSeconds: `rollout
// status` exits non-zero saying so, well before its --timeout.
func TestKubectlKruiseRolloutStatusStalls(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-stall")

	cs := busyboxCloneSet(f, ns, "web", 1, appsv1alpha1.RecreateCloneSetUpdateStrategyType)
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	createCloneSet(ctx, t, kc, cs)
	waitPodsSettled(ctx, t, f, kc, ns, "web", 1)
	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(f.Image("public/no-such-image:"+rand.String(6))))

	start := time.Now()
	out, err := plugin.Run(ctx, "-n", ns, "rollout", "status", "cloneset/web", "--timeout=3m")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("rollout status of a stalled rollout: %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(out, `error: CloneSet "web" rollout exceeded its progress deadline`) || strings.Contains(out, "command failed") {
		t.Errorf("output does not say, as kubectl says an error, that the deadline passed:\n%s", out)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("status took %s: it should end at the deadline, not at --timeout", took)
	}
}

// history, undo, pause, resume and restart on a CloneSet and an Advanced StatefulSet, checked
// against the objects.
func TestKubectlKruiseRolloutHistoryUndoPauseRestart(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-history")
	variant := f.BusyboxVariant(t)
	original := f.Image("public/busybox:1.35")
	run := func(args ...string) string {
		return plugin.MustRun(ctx, t, append([]string{"-n", ns, "rollout"}, args...)...)
	}

	createCloneSet(ctx, t, kc, inPlaceCloneSet(f, ns))
	set := busyboxStatefulSet(f, ns, "db", 2)
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Advanced StatefulSet: %v", err)
	}
	run("status", "cloneset/web", "--timeout=3m")
	run("status", "asts/db", "--timeout=3m")
	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "db", "application/json-patch+json", []byte(imagePatch(variant)), metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating the Advanced StatefulSet's image: %v", err)
	}
	run("status", "cloneset/web", "--timeout=3m")
	run("status", "asts/db", "--timeout=3m")

	for _, w := range []struct{ arg, ref string }{{"cloneset/web", "cloneset.apps.kruise.io/web"}, {"asts/db", "statefulset.apps.kruise.io/db"}} {
		history := run("history", w.arg)
		if !strings.Contains(history, "REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>") {
			t.Errorf("history %s:\n%s\nwant revisions 1 and 2", w.arg, history)
		}
		if rev1 := run("history", w.arg, "--revision=1"); !strings.Contains(rev1, "Image:\t"+original) {
			t.Errorf("history %s --revision=1 does not show image %s:\n%s", w.arg, original, rev1)
		}
		if out := run("pause", w.arg); out != w.ref+" paused\n" {
			t.Errorf("pause %s: %q", w.arg, out)
		}
		if out := run("pause", w.arg); out != w.ref+" already paused\n" {
			t.Errorf("pause %s again: %q", w.arg, out)
		}
		if out := run("resume", w.arg); out != w.ref+" resumed\n" {
			t.Errorf("resume %s: %q", w.arg, out)
		}
		if out := run("undo", w.arg, "--dry-run=client"); !strings.Contains(out, "will roll back to Pod Template:") || !strings.Contains(out, original) {
			t.Errorf("undo %s --dry-run=client:\n%s", w.arg, out)
		}
		if out := run("undo", w.arg); out != w.ref+" rolled back\n" {
			t.Errorf("undo %s: %q", w.arg, out)
		}
		run("status", w.arg, "--timeout=3m")
		if out := run("restart", w.arg); out != w.ref+" restarted\n" {
			t.Errorf("restart %s: %q", w.arg, out)
		}
		run("status", w.arg, "--timeout=3m")
	}

	cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := cs.Spec.Template.Spec.Containers[0].Image; img != original || cs.Spec.UpdateStrategy.Paused ||
		cs.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("CloneSet after undo, resume and restart: image %s, paused %t, annotations %v; want %s, not paused, restartedAt",
			img, cs.Spec.UpdateStrategy.Paused, cs.Spec.Template.Annotations, original)
	}
	sts, err := kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ru := sts.Spec.UpdateStrategy.RollingUpdate
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != original || (ru != nil && ru.Paused) ||
		sts.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("Advanced StatefulSet after undo, resume and restart: image %s, rollingUpdate %+v, annotations %v",
			img, ru, sts.Spec.Template.Annotations)
	}
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		if p.Spec.Containers[0].Image != original {
			t.Errorf("CloneSet pod %s runs %s after the undo, want %s", p.Name, p.Spec.Containers[0].Image, original)
		}
	}
}

// On a terminal (a tmux pane of 100x20), `rollout status` draws a progress bar redrawn in place
// that ends full, with the counts and the success line, as a user sees it.
func TestKubectlKruiseRolloutStatusInTerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("no tmux: run `make deps` (hack/install-deps.sh installs it)")
	}
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-tty")
	variant := f.BusyboxVariant(t)

	createCloneSet(ctx, t, kc, inPlaceCloneSet(f, ns))
	waitPodsSettled(ctx, t, f, kc, ns, "web", 3)
	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))

	// A tmux server of the test's own (-L), and a session it kills by name.
	socket, session := "kk-e2e-"+rand.String(6), "status"
	tmux := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "tmux", append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	shell := fmt.Sprintf("%s -n %s rollout status cloneset/web --timeout=3m; echo EXIT=$?; sleep 600", plugin.Path, ns)
	if out, err := tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "20", "-e", "KUBECONFIG="+os.Getenv("KUBECONFIG"), shell); err != nil {
		t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("tmux", "-L", socket, "kill-session", "-t", session).CombinedOutput(); err != nil {
			t.Logf("killing tmux session %s: %v\n%s", session, err, out)
		}
	})
	var screen string
	sawProgress := false
	framework.WaitFor(ctx, t, 3*time.Minute, "the rollout's view to end in the tmux pane", func(ctx context.Context) (bool, string, error) {
		var err error
		if screen, err = tmux("capture-pane", "-p", "-t", session); err != nil {
			return false, "", fmt.Errorf("capturing the pane: %v: %s", err, screen)
		}
		if strings.Contains(screen, "/3 updated") && !strings.Contains(screen, "3/3 updated  3 ready") {
			sawProgress = true
		}
		return strings.Contains(screen, "EXIT="), screen, nil
	})
	t.Logf("the pane:\n%s", screen)
	for _, want := range []string{
		"CloneSet web  revision web-",
		"[" + strings.Repeat("#", 30) + "] 3/3 updated  3 ready  3 available",
		`CloneSet "web" successfully rolled out`,
		"EXIT=0",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the pane does not show %q", want)
		}
	}
	// Redrawn in place: one bar on the screen, not one per change.
	if n := strings.Count(screen, "] "); n != 1 {
		t.Errorf("the pane shows %d bars, want the one redrawn in place", n)
	}
	if !sawProgress {
		t.Log("the rollout finished before a partial bar was captured")
	}
	scanner := bufio.NewScanner(strings.NewReader(screen))
	for scanner.Scan() {
		if len(scanner.Text()) > 100 {
			t.Errorf("line wider than the pane: %q", scanner.Text())
		}
	}
}
