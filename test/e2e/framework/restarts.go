package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RestartSnapshot records, per started kruise-system pod, the restart count of each of its
// containers.
type RestartSnapshot map[types.UID]podRestarts

type podRestarts struct {
	name     string
	restarts map[string]int32
}

// KruiseRestarts takes a RestartSnapshot of the kruise-daemon and kruise-controller pods and
// fails the test unless there is at least one of each.
func (f *Framework) KruiseRestarts(ctx context.Context, t testing.TB) RestartSnapshot {
	t.Helper()
	pods, err := f.Client.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=kruise"})
	if err != nil {
		t.Fatalf("listing kruise pods: %v", err)
	}
	out := RestartSnapshot{}
	seen := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		// Pods that never started (daemons for node objects without a kubelet) cannot restart.
		pr := podRestarts{name: p.Name, restarts: map[string]int32{}}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.ContainerID != "" {
				pr.restarts[cs.Name] = cs.RestartCount
			}
		}
		if len(pr.restarts) == 0 {
			continue
		}
		out[p.UID] = pr
		seen[p.Labels["app.kubernetes.io/name"]] = true
	}
	for _, want := range []string{"kruise-daemon", "kruise-controller"} {
		if !seen[want] {
			t.Fatalf("no %s pod in %s: %s", want, KruiseNamespace, f.DescribePods(ctx, KruiseNamespace, "app.kubernetes.io/part-of=kruise"))
		}
	}
	return out
}

// RequireNoRestarts fails the test when a container of a pod in before has restarted since,
// with how it last ended and the tail of its previous log (a panic shows there). A pod that is
// gone (replaced by a rollout or another test) is only logged: a crash restarts the container,
// it does not replace the pod.
func (f *Framework) RequireNoRestarts(ctx context.Context, t testing.TB, before RestartSnapshot) {
	t.Helper()
	uids := make([]string, 0, len(before))
	for uid := range before {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	var problems []string
	for _, uid := range uids {
		was := before[types.UID(uid)]
		pod, err := f.Client.CoreV1().Pods(KruiseNamespace).Get(ctx, was.name, metav1.GetOptions{})
		if err != nil || string(pod.UID) != uid {
			t.Logf("kruise pod %s (uid %s) is gone since the start of the test (err %v)", was.name, uid, err)
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			n, ok := was.restarts[cs.Name]
			if !ok || cs.RestartCount == n {
				continue
			}
			msg := fmt.Sprintf("container %s of %s restarted %d time(s) during the test", cs.Name, pod.Name, cs.RestartCount-n)
			if term := cs.LastTerminationState.Terminated; term != nil {
				msg += fmt.Sprintf(" (last exit: code %d, reason %s)", term.ExitCode, term.Reason)
			}
			if logs, err := f.PreviousPodLogs(ctx, KruiseNamespace, pod.Name, cs.Name); err == nil {
				msg += "; previous log ends:\n" + lastLines(logs, 30)
			}
			problems = append(problems, msg)
		}
	}
	if len(problems) > 0 {
		t.Errorf("kruise components restarted:\n%s", strings.Join(problems, "\n"))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
