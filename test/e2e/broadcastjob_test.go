//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// bcjKey, valued with the test's namespace, labels the simulated nodes of one BroadcastJob test:
// each job selects its own nodes only, never another test's.
const bcjKey = "kruise.e2e/bcj"

// bcjRun is one BroadcastJob test's job, nodes and view of its pods. Nobody runs the pods on
// simulated nodes: the test plays their kubelet and ends them (simEnd), as kwok has no stage
// that ends a pod.
type bcjRun struct {
	f    *framework.Framework
	kc   versioned.Interface
	ns   string
	name string
	sim  map[string]bool

	mu sync.Mutex
	// seen is every pod of the job ever listed, by node: a node must never have had two.
	seen map[string]map[string]bool
}

func newBCJRun(ctx context.Context, t *testing.T, prefix string, simNodes int) *bcjRun {
	t.Helper()
	f := framework.New(t)
	r := &bcjRun{f: f, kc: f.KruiseClient(t), name: "bcj", sim: map[string]bool{}, seen: map[string]map[string]bool{}}
	r.ns = f.NewNamespace(ctx, t, prefix)
	r.addNodes(ctx, t, simNodes)
	return r
}

func (r *bcjRun) addNodes(ctx context.Context, t *testing.T, n int) []string {
	t.Helper()
	names := r.f.SimNodes(ctx, t, "bcj", n, map[string]string{bcjKey: r.ns})
	for _, n := range names {
		r.sim[n] = true
	}
	return names
}

// job is a BroadcastJob over the test's simulated nodes (and the real node when real), whose
// pods run busybox `true`, changed by mods.
func (r *bcjRun) job(real bool, mods ...func(*v1beta1.BroadcastJob)) *v1beta1.BroadcastJob {
	terms := []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: bcjKey, Operator: corev1.NodeSelectorOpIn, Values: []string{r.ns}}}}}
	if real {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{framework.NodeName()}}}})
	}
	j := &v1beta1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.ns},
		Spec: v1beta1.BroadcastJobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bcj"}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
					}},
					Tolerations: []corev1.Toleration{framework.SimNodeToleration()},
					Containers:  []corev1.Container{{Name: "main", Image: r.f.Image("public/busybox:1.35"), Command: []string{"true"}}},
				},
			},
			CompletionPolicy: v1beta1.CompletionPolicy{Type: v1beta1.Always},
		},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func (r *bcjRun) create(ctx context.Context, t *testing.T, job *v1beta1.BroadcastJob) {
	t.Helper()
	if _, err := r.kc.AppsV1beta1().BroadcastJobs(r.ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating BroadcastJob: %v", err)
	}
}

func (r *bcjRun) get(ctx context.Context) (*v1beta1.BroadcastJob, error) {
	return r.kc.AppsV1beta1().BroadcastJobs(r.ns).Get(ctx, r.name, metav1.GetOptions{})
}

// pods lists the job's pods and fails the test when a node has ever had two.
func (r *bcjRun) pods(ctx context.Context, t *testing.T) ([]corev1.Pod, error) {
	t.Helper()
	list, err := r.f.Client.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.BroadcastJobNameLabel + "=" + r.name})
	if err != nil {
		return nil, framework.Retry(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range list.Items {
		node := nodefit.TargetNode(&p)
		if r.seen[node] == nil {
			r.seen[node] = map[string]bool{}
		}
		r.seen[node][p.Name] = true
		if len(r.seen[node]) > 1 {
			t.Errorf("node %s has had more than one pod of the job: %v", node, slices.Sorted(maps.Keys(r.seen[node])))
		}
	}
	return list.Items, nil
}

// simEnd ends, as a kubelet would, the job's Running pods on simulated nodes that pick says
// (nil: all), in phase, and returns how many.
func (r *bcjRun) simEnd(ctx context.Context, t *testing.T, phase corev1.PodPhase, pick func(*corev1.Pod) bool) (int, error) {
	t.Helper()
	pods, err := r.pods(ctx, t)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods {
		p := &pods[i]
		if !r.sim[p.Spec.NodeName] || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || (pick != nil && !pick(p)) {
			continue
		}
		code := int32(0)
		if phase == corev1.PodFailed {
			code = 1
		}
		p.Status.Phase = phase
		for j := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[j]
			cs.Ready, cs.Started = false, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.Now()}}
		}
		if _, err := r.f.Client.CoreV1().Pods(r.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue // the next round
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// wait waits for the job to satisfy cond, ending its simulated pods Succeeded meanwhile when
// end is set.
func (r *bcjRun) wait(ctx context.Context, t *testing.T, timeout time.Duration, desc string, end bool, cond func(*v1beta1.BroadcastJob, []corev1.Pod) bool) *v1beta1.BroadcastJob {
	t.Helper()
	var job *v1beta1.BroadcastJob
	framework.WaitFor(ctx, t, timeout, "BroadcastJob "+desc, func(ctx context.Context) (bool, string, error) {
		var err error
		if end {
			if _, err = r.simEnd(ctx, t, corev1.PodSucceeded, nil); err != nil {
				return false, "", err
			}
		}
		if job, err = r.get(ctx); err != nil {
			return false, "", framework.Retry(err)
		}
		pods, err := r.pods(ctx, t)
		if err != nil {
			return false, "", err
		}
		return cond(job, pods), describeBCJ(job, pods), nil
	})
	return job
}

func describeBCJ(job *v1beta1.BroadcastJob, pods []corev1.Pod) string {
	var ps []string
	for _, p := range pods {
		d := ""
		if p.DeletionTimestamp != nil {
			d = " deleting"
		}
		ps = append(ps, fmt.Sprintf("%s@%s %s%s", p.Name, nodefit.TargetNode(&p), p.Status.Phase, d))
	}
	s := job.Status
	return fmt.Sprintf("phase %q desired %d active %d succeeded %d failed %d conditions %d; pods %s",
		s.Phase, s.Desired, s.Active, s.Succeeded, s.Failed, len(s.Conditions), strings.Join(ps, ", "))
}

func condition(job *v1beta1.BroadcastJob, t v1beta1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func counts4(job *v1beta1.BroadcastJob) [4]int32 {
	s := job.Status
	return [4]int32{s.Desired, s.Active, s.Succeeded, s.Failed}
}

// A BroadcastJob runs one pod on every node it selects, the real node (where busybox really runs
// `true`) and two simulated ones, completes with true counts, and is deleted after its TTL.
func TestBroadcastJobCompletesOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-all", 2)
	r.create(ctx, t, r.job(true, func(j *v1beta1.BroadcastJob) { j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](5) }))
	job := r.wait(ctx, t, 3*time.Minute, "completes", true, func(j *v1beta1.BroadcastJob, _ []corev1.Pod) bool { return condition(j, v1beta1.JobComplete) })
	if got := counts4(job); got != [4]int32{3, 0, 3, 0} || job.Status.Phase != v1beta1.PhaseCompleted || job.Status.CompletionTime == nil {
		t.Fatalf("completed job: %s", describeBCJ(job, nil))
	}
	pods, err := r.pods(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
		if p.Spec.NodeName == framework.NodeName() && p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("the real node's pod %s is %s", p.Name, p.Status.Phase)
		}
		if !strings.HasPrefix(p.Name, "bcj-") || p.Labels[v1beta1.BroadcastJobControllerUIDLabel] != string(job.UID) {
			t.Errorf("pod %s: name or labels %v", p.Name, p.Labels)
		}
	}
	if len(pods) != 3 || !nodes[framework.NodeName()] {
		t.Fatalf("want one pod on each of 3 nodes, the real one included: %s", describeBCJ(job, pods))
	}
	framework.WaitFor(ctx, t, time.Minute, "the completed job deleted after its TTL", func(ctx context.Context) (bool, string, error) {
		_, err := r.get(ctx)
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// With completionPolicy Never the job keeps running: a node that joins later gets a pod.
func TestBroadcastJobNeverGivesNewNodesAPod(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-never", 1)
	r.create(ctx, t, r.job(false, func(j *v1beta1.BroadcastJob) { j.Spec.CompletionPolicy.Type = v1beta1.Never }))
	r.wait(ctx, t, 2*time.Minute, "runs its pod to the end on the first node", true, func(j *v1beta1.BroadcastJob, _ []corev1.Pod) bool {
		return j.Status.Succeeded == 1 && j.Status.Desired == 1
	})
	late := r.addNodes(ctx, t, 1)[0]
	job := r.wait(ctx, t, 2*time.Minute, "gives the new node a pod", true, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		return j.Status.Succeeded == 2 && j.Status.Desired == 2 && slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == late })
	})
	if len(job.Status.Conditions) != 0 || job.Status.Phase != v1beta1.PhaseRunning {
		t.Fatalf("a Never job does not finish: %s", describeBCJ(job, nil))
	}
}

// failurePolicy FailFast: the first failed pod fails the job, and its active pods are deleted.
func TestBroadcastJobFailFast(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-failfast", 3)
	r.create(ctx, t, r.job(false))
	r.wait(ctx, t, 2*time.Minute, "runs its 3 pods", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		return j.Status.Active == 3 && len(pods) == 3 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase != corev1.PodRunning })
	})
	failedOne := false
	job := r.wait(ctx, t, 2*time.Minute, "fails", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		if !failedOne {
			picked := false // one pod only: the first one simEnd offers
			n, err := r.simEnd(ctx, t, corev1.PodFailed, func(*corev1.Pod) bool {
				if picked {
					return false
				}
				picked = true
				return true
			})
			failedOne = err == nil && n > 0
		}
		live := slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil })
		return condition(j, v1beta1.JobFailed) && !live
	})
	if job.Status.Phase != v1beta1.PhaseFailed || job.Status.Failed != 1 || job.Status.Active != 0 || job.Status.Succeeded != 0 {
		t.Fatalf("failed job: %s", describeBCJ(job, nil))
	}
}

// parallelism 2 over 5 nodes: never more than 2 pods active; every node gets its one pod.
func TestBroadcastJobParallelism(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-parallel", 5)
	r.create(ctx, t, r.job(false, func(j *v1beta1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(2)) }))
	job := r.wait(ctx, t, 3*time.Minute, "completes two at a time", true, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		active := 0
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
				active++
			}
		}
		if active > 2 {
			t.Errorf("%d pods active with parallelism 2: %s", active, describeBCJ(j, pods))
		}
		return condition(j, v1beta1.JobComplete)
	})
	if counts4(job) != [4]int32{5, 0, 5, 0} {
		t.Fatalf("completed job: %s", describeBCJ(job, nil))
	}
}

// A node deleted while its pod runs: the pod is deleted, no second pod is made, the node leaves
// desired, and the job completes on the others with true counts.
func TestBroadcastJobNodeDeletedMidRun(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-nodegone", 3)
	r.create(ctx, t, r.job(false))
	r.wait(ctx, t, 2*time.Minute, "runs its 3 pods", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		return j.Status.Active == 3 && len(pods) == 3
	})
	gone := slices.Sorted(maps.Keys(r.sim))[0]
	if err := r.f.Client.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node %s: %v", gone, err)
	}
	r.wait(ctx, t, 2*time.Minute, "drops the deleted node", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		onGone := slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == gone && p.DeletionTimestamp == nil })
		return j.Status.Desired == 2 && j.Status.Active == 2 && !onGone
	})
	job := r.wait(ctx, t, 2*time.Minute, "completes on the other two", true, func(j *v1beta1.BroadcastJob, _ []corev1.Pod) bool { return condition(j, v1beta1.JobComplete) })
	if counts4(job) != [4]int32{2, 0, 2, 0} {
		t.Fatalf("completed job: %s", describeBCJ(job, nil))
	}
}

// A node that turns against the pod mid-run (a NoExecute taint it does not tolerate, as a
// NotReady node's once its pods' 300 s are up): the pod is deleted, the node leaves desired, no
// second pod is made there, and the job completes on the others.
func TestBroadcastJobNodeEvictsMidRun(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	r := newBCJRun(ctx, t, "bcj-evict", 3)
	r.create(ctx, t, r.job(false))
	r.wait(ctx, t, 2*time.Minute, "runs its 3 pods", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		return j.Status.Active == 3 && len(pods) == 3
	})
	bad := slices.Sorted(maps.Keys(r.sim))[0]
	node, err := r.f.Client.CoreV1().Nodes().Get(ctx, bad, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "kruise.e2e/bcj-evict", Value: "x", Effect: corev1.TaintEffectNoExecute})
	if _, err := r.f.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("tainting node %s: %v", bad, err)
	}
	job := r.wait(ctx, t, 2*time.Minute, "completes on the other two", true, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		onBad := slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == bad })
		return condition(j, v1beta1.JobComplete) && !onBad
	})
	if counts4(job) != [4]int32{2, 0, 2, 0} {
		t.Fatalf("completed job: %s", describeBCJ(job, nil))
	}
}

// The leader kruise-controller is killed while the job runs: the next leader starts from its
// cache and never gives a node a second pod; the job completes with true counts. Not parallel:
// the other tests would lose their controller for a while.
func TestBroadcastJobControllerRestartMidRun(t *testing.T) {
	ctx := framework.Context(t, 5*time.Minute)
	r := newBCJRun(ctx, t, "bcj-restart", 6)
	r.create(ctx, t, r.job(false, func(j *v1beta1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(3)) }))
	r.wait(ctx, t, 2*time.Minute, "runs 3 pods", false, func(j *v1beta1.BroadcastJob, pods []corev1.Pod) bool {
		return j.Status.Active == 3 && len(pods) == 3
	})
	lease, err := r.f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, framework.ControllerDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	leader, _, _ := strings.Cut(holder, "_")
	// End one pod at the moment the leader goes, so that the next one has work to do at once.
	if _, err := r.simEnd(ctx, t, corev1.PodSucceeded, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.f.Client.CoreV1().Pods(framework.KruiseNamespace).Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("killing the leader %s: %v", leader, err)
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "another kruise-controller leads", func(ctx context.Context) (bool, string, error) {
		l, err := r.f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, framework.ControllerDeployment, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		return h != "" && h != holder, "holder " + h, nil
	})
	job := r.wait(ctx, t, 3*time.Minute, "completes", true, func(j *v1beta1.BroadcastJob, _ []corev1.Pod) bool { return condition(j, v1beta1.JobComplete) })
	if counts4(job) != [4]int32{6, 0, 6, 0} {
		t.Fatalf("completed job: %s", describeBCJ(job, nil))
	}
	r.f.WaitControllerRolledOut(ctx, t, 2*time.Minute)
}

// The BroadcastJob examples of docs/examples (docs/broadcastjob.md runs them) complete as they
// are written, on the real node: the report, and the pods with a sidecar, which the job sidecar
// terminator stops once the main container has ended.
func TestBroadcastJobExamples(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "bcj-examples")
	var names []string
	for _, file := range []string{"all-nodes", "sidecar"} {
		path := "../../docs/examples/broadcastjob-" + file + ".yaml"
		objs := exampleObjects(t, path)
		if len(objs) != 1 {
			t.Fatalf("%s: want one object, got %d", path, len(objs))
		}
		job, ok := objs[0].(*appsv1alpha1.BroadcastJob)
		if !ok {
			t.Fatalf("%s: a %T, not a BroadcastJob", path, objs[0])
		}
		job.Namespace = ns
		if _, err := kc.AppsV1alpha1().BroadcastJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		names = append(names, job.Name)
	}
	for _, name := range names {
		framework.WaitFor(ctx, t, 3*time.Minute, "example BroadcastJob "+name+" completes", func(ctx context.Context) (bool, string, error) {
			job, err := kc.AppsV1beta1().BroadcastJobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", framework.Retry(err)
			}
			pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.BroadcastJobNameLabel + "=" + name})
			if err != nil {
				return false, "", framework.Retry(err)
			}
			if condition(job, v1beta1.JobFailed) {
				return false, "", fmt.Errorf("failed: %s", describeBCJ(job, pods.Items))
			}
			ok := condition(job, v1beta1.JobComplete) && job.Status.Failed == 0 && job.Status.Succeeded == job.Status.Desired && job.Status.Desired >= 1
			return ok, describeBCJ(job, pods.Items), nil
		})
	}
}
