//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// leaderWaitReplicasAvailable waits until the kruise-controller Deployment has rolled out with at
// least 2 replicas, all available, and the API server reaches their webhook, and returns its pods.
// Every disruptive test ends on it, so the next one starts with kruise admitting objects.
func leaderWaitReplicasAvailable(ctx context.Context, t *testing.T, f *framework.Framework, timeout time.Duration) []corev1.Pod {
	t.Helper()
	d, err := f.Client.AppsV1().Deployments(framework.KruiseNamespace).Get(ctx, leaderDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Deployment %s/%s: %v", framework.KruiseNamespace, leaderDeployment, err)
	}
	if r := ptr.Deref(d.Spec.Replicas, 1); r < 2 {
		t.Fatalf("Deployment %s/%s has %d replica(s): leader failover needs at least 2 (deploy/ sets 2)", d.Namespace, d.Name, r)
	}
	pods := f.WaitControllerRolledOut(ctx, t, timeout)
	f.WaitWebhookAnswers(ctx, t, time.Minute)
	return pods
}

// leaderCurrent waits until the Lease names the replica of one of pods (right after a rollout it
// may still name a replica of the old ReplicaSet) and returns that pod and the Lease.
func leaderCurrent(ctx context.Context, t *testing.T, f *framework.Framework, pods []corev1.Pod) (corev1.Pod, *coordinationv1.Lease) {
	t.Helper()
	var lease *coordinationv1.Lease
	var leader corev1.Pod
	framework.WaitFor(ctx, t, time.Minute, "the Lease held by one of the controller pods", func(ctx context.Context) (bool, string, error) {
		l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		lease = l
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		if h == "" {
			return false, leaderDescribeLease(l), nil
		}
		p, desc, err := leaderFindPod(ctx, f, pods, h)
		if p == nil || err != nil {
			return false, leaderDescribeLease(l) + ": " + desc, err
		}
		leader = *p
		return true, leaderDescribeLease(l), nil
	})
	return leader, lease
}

func leaderGetPod(ctx context.Context, t *testing.T, f *framework.Framework, name string) *corev1.Pod {
	t.Helper()
	p, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading pod %s/%s: %v", framework.KruiseNamespace, name, err)
	}
	return p
}

func leaderGetLease(ctx context.Context, t *testing.T, f *framework.Framework) *coordinationv1.Lease {
	t.Helper()
	l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Lease %s/%s: %v", framework.KruiseNamespace, leaderLease, err)
	}
	return l
}

func leaderDescribeLease(l *coordinationv1.Lease) string {
	var acquire, renew string
	if l.Spec.AcquireTime != nil {
		acquire = l.Spec.AcquireTime.Format(time.RFC3339Nano)
	}
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("holder %q transitions %d duration %ds acquired %s renewed %s", ptr.Deref(l.Spec.HolderIdentity, ""),
		ptr.Deref(l.Spec.LeaseTransitions, 0), ptr.Deref(l.Spec.LeaseDurationSeconds, 0), acquire, renew)
}

// leaderPodOf returns the controller pod whose running container is the replica with this
// leader-election identity, and fails the test when there is none.
func leaderPodOf(ctx context.Context, t *testing.T, f *framework.Framework, pods []corev1.Pod, identity string) corev1.Pod {
	t.Helper()
	p, desc, err := leaderFindPod(ctx, f, pods, identity)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatal(desc)
	}
	return *p
}

// leaderFindPod finds the pod of pods whose running container is the replica with this
// leader-election identity (nil and why not if none). The identity is the replica's hostname,
// "_" and a random suffix (pkg/controller.Identity), so the pod whose name is the hostname part;
// but a pod on the host network has the node's hostname, so otherwise the pod is the one whose
// log gives the identity as its own (the replica logs it when it starts waiting for the Lease;
// standbys log the leader's identity too, under another key).
func leaderFindPod(ctx context.Context, f *framework.Framework, pods []corev1.Pod, identity string) (*corev1.Pod, string, error) {
	if i := strings.LastIndex(identity, "_"); i > 0 {
		for k := range pods {
			if pods[k].Name == identity[:i] {
				return &pods[k], "", nil
			}
		}
	}
	var found []*corev1.Pod
	var names []string
	for k := range pods {
		p := &pods[k]
		names = append(names, p.Name)
		logs, err := f.PodLogs(ctx, p.Namespace, p.Name, leaderContainer)
		if err != nil {
			return nil, "", fmt.Errorf("reading the log of %s to find leader-election identity %s: %w", p.Name, identity, err)
		}
		if leaderLogsOwnIdentity(logs, identity) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Sprintf("%d of the controller pods %v run the replica with identity %s", len(found), names, identity), nil
	}
	return found[0], "", nil
}

// leaderLogsOwnIdentity reports whether a replica's log gives identity as its own: the key
// "identity" (text or JSON logging) right before it, as pkg/controller logs "Waiting to acquire
// the leader-election lease". Standbys name the leader under the key "leader".
func leaderLogsOwnIdentity(logs, identity string) bool {
	return strings.Contains(logs, `identity="`+identity+`"`) || strings.Contains(logs, `"identity":"`+identity+`"`)
}

// leaderLeaseWatch records every state of the Lease a watch shows, from when it starts until the
// test ends.
type leaderLeaseWatch struct {
	mu      sync.Mutex
	records []leaderLeaseRecord
}

type leaderLeaseRecord struct {
	at     time.Time
	holder string
	desc   string
	spec   coordinationv1.LeaseSpec
}

// leaderWatchLease starts recording the kruise-controller Lease.
func leaderWatchLease(ctx context.Context, t *testing.T, f *framework.Framework) *leaderLeaseWatch {
	t.Helper()
	w := &leaderLeaseWatch{}
	leases := f.Client.CoordinationV1().Leases(framework.KruiseNamespace)
	sel := fields.OneTermEqualSelector("metadata.name", leaderLease).String()
	list, err := leases.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("listing Lease %s: %v", leaderLease, err)
	}
	for i := range list.Items {
		w.observe(&list.Items[i])
	}
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return leases.Watch(ctx, opts)
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("watching Lease %s: %v", leaderLease, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok {
				w.observe(l)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	return w
}

func (w *leaderLeaseWatch) observe(l *coordinationv1.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.records = append(w.records, leaderLeaseRecord{at: time.Now(), holder: ptr.Deref(l.Spec.HolderIdentity, ""), desc: leaderDescribeLease(l),
		spec: *l.Spec.DeepCopy()})
}

// all returns every state recorded so far, oldest first.
func (w *leaderLeaseWatch) all() []leaderLeaseRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.records)
}

// released describes the first state with no holder (how client-go releases a Lease), or "".
func (w *leaderLeaseWatch) released() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.records {
		if r.holder == "" {
			return r.at.Format(time.RFC3339Nano) + ": " + r.desc
		}
	}
	return ""
}

// holdersFrom lists, in order and without repeats, the holders seen from the first state held by
// holder on (nil if holder was never seen).
func (w *leaderLeaseWatch) holdersFrom(holder string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.records {
		if len(out) == 0 && r.holder != holder {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != r.holder {
			out = append(out, r.holder)
		}
	}
	return out
}

// leaderOwned reports whether an observation shows the job's request on the node.
func leaderOwned(o framework.TagObservation, uid types.UID) bool {
	return o.Spec != nil && slices.ContainsFunc(o.Spec.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// leaderHandedOut reports whether the job's request has ever been seen on node.
func leaderHandedOut(w *framework.NodeImageWatch, node string, uid types.UID) bool {
	_, ok := w.Find(node, func(o framework.TagObservation) bool { return leaderOwned(o, uid) })
	return ok
}

// leaderHandOuts counts how many times the job's request appeared on node (absent → present) and
// lists the distinct versions it carried: one pull is one appearance with one version.
func leaderHandOuts(w *framework.NodeImageWatch, node string, uid types.UID) (runs int, versions []int64) {
	prev := false
	for _, o := range w.History(node) {
		owned := leaderOwned(o, uid)
		if owned && !prev {
			runs++
		}
		if owned && !slices.Contains(versions, o.Spec.Version) {
			versions = append(versions, o.Spec.Version)
		}
		prev = owned
	}
	return runs, versions
}

// leaderVersion is the version of the tag's request on node now (-1: none).
func leaderVersion(w *framework.NodeImageWatch, node, repo, tag string) int64 {
	if ni := w.Latest(node); ni != nil {
		if spec := framework.TagSpecOf(ni, repo, tag); spec != nil {
			return spec.Version
		}
	}
	return -1
}

// leaderUnfinished lists the nodes carrying the job's request without a result for its version.
func leaderUnfinished(latest map[string]*appsv1beta1.NodeImage, nodes []string, repo, tag string, uid types.UID) []string {
	return framework.UnfinishedFor(latest, nodes, repo, tag, uid)
}

// leaderNextNode waits until the controller asks one of the nodes not yet handled to pull, marks it
// handled and returns it.
func leaderNextNode(ctx context.Context, t *testing.T, w *framework.NodeImageWatch, nodes []string, handled map[string]bool, uid types.UID) string {
	t.Helper()
	var next string
	framework.WaitFor(ctx, t, leaderStepTimeout, "the controller to ask the next node to pull", func(context.Context) (bool, string, error) {
		for _, n := range nodes {
			if !handled[n] && leaderHandedOut(w, n, uid) {
				next = n
				return true, n, nil
			}
		}
		return false, fmt.Sprintf("handled %v; %s", framework.SortedKeys(handled), leaderDescribeNodes(w, nodes)), nil
	})
	handled[next] = true
	return next
}

// leaderPull plays node's daemon: it reports the requested version Pulling and, if finish, then
// Succeeded. It returns the version.
func leaderPull(ctx context.Context, t *testing.T, c versioned.Interface, w *framework.NodeImageWatch, node, repo, tag string, finish bool) int64 {
	t.Helper()
	v := leaderVersion(w, node, repo, tag)
	if v < 0 {
		t.Fatalf("node %s has no request for %s:%s: %s", node, repo, tag, w.Summary(node))
	}
	framework.SetTagStatus(ctx, t, c, node, repo, tag, v, appsv1beta1.ImagePhasePulling)
	if finish {
		framework.SetTagStatus(ctx, t, c, node, repo, tag, v, appsv1beta1.ImagePhaseSucceeded)
	}
	return v
}

func leaderDescribeNodes(w *framework.NodeImageWatch, nodes []string) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, w.Summary(n))
	}
	return strings.Join(parts, " | ")
}

// leaderJob is the work in flight of the leader tests: an ImagePullJob over three fake nodes with
// parallelism 1, node 1 pulled, node 2 handed out and its pull held open by the test, node 3
// waiting. The watch fails the test if two nodes are ever asked at once.
type leaderJob struct {
	nodes      []string
	repo, tag  string
	w          *framework.NodeImageWatch
	job        *appsv1beta1.ImagePullJob
	handed     map[string]bool
	n1, n2, n3 string
	n2Version  int64
}

// leaderStartJob creates the fake nodes (named prefix + a random suffix) and the job name in ns,
// and plays the daemons of nodes 1 and 2 as far as leaderJob says.
func leaderStartJob(ctx context.Context, t *testing.T, f *framework.Framework, c versioned.Interface, ns, prefix, name string) *leaderJob {
	t.Helper()
	suffix := rand.String(5)
	var nodes []string
	for _, s := range []string{"a", "b", "c"} {
		n := prefix + suffix + "-" + s
		nodes = append(nodes, n)
		f.FakeNode(ctx, t, c, n, map[string]string{"kubernetes.io/hostname": n, leaderFakeNodeLabel: suffix})
	}
	image := f.UniqueImage("public/") // never really pulled: only fake nodes are asked
	repo, tag := framework.SplitImage(image)
	w := framework.WatchNodeImageTag(ctx, t, c, image)
	var uid atomic.Value
	uid.Store(types.UID(""))
	w.CheckEachEvent(func(latest map[string]*appsv1beta1.NodeImage) string {
		if u := leaderUnfinished(latest, nodes, repo, tag, uid.Load().(types.UID)); len(u) > 1 {
			return fmt.Sprintf("%d nodes asked to pull at once with parallelism 1: %v", len(u), u)
		}
		return ""
	})

	job := framework.NewImagePullJob(ns, name, image)
	job.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
		MatchLabels: map[string]string{leaderFakeNodeLabel: suffix},
	}}
	job.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	// No per-pull timeout or deadline may cut in while the test holds node 2's pull open.
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](0)}
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](900)
	created := framework.CreateImagePullJob(ctx, t, c, job)
	uid.Store(created.UID)
	j := &leaderJob{nodes: nodes, repo: repo, tag: tag, w: w, job: created, handed: map[string]bool{}}

	// Node 1: handed out and pulled. Node 2: handed out, its pull held open.
	j.n1 = leaderNextNode(ctx, t, w, nodes, j.handed, created.UID)
	leaderPull(ctx, t, c, w, j.n1, repo, tag, true)
	j.n2 = leaderNextNode(ctx, t, w, nodes, j.handed, created.UID)
	j.n2Version = leaderPull(ctx, t, c, w, j.n2, repo, tag, false)
	j.n3 = nodes[slices.IndexFunc(nodes, func(n string) bool { return !j.handed[n] })]
	return j
}

// finish checks that the leader now in charge resumes the job where the old one left it: node
// 2 still pulls, so no other node is asked and node 2 is not asked again; once node 2's pull
// succeeds, node 3 is handed out; the job completes with every node asked exactly once.
func (j *leaderJob) finish(ctx context.Context, t *testing.T, c versioned.Interface) {
	t.Helper()
	w, nodes := j.w, j.nodes
	framework.Consistently(ctx, t, leaderQuietWindow, "the new leader to wait for node "+j.n2+"'s pull in flight", func(context.Context) (bool, string, error) {
		ok := len(w.Violations()) == 0 && !leaderHandedOut(w, j.n3, j.job.UID) && leaderVersion(w, j.n2, j.repo, j.tag) == j.n2Version
		return ok, strings.Join(w.Violations(), "; ") + " | " + leaderDescribeNodes(w, nodes), nil
	})
	framework.SetTagStatus(ctx, t, c, j.n2, j.repo, j.tag, j.n2Version, appsv1beta1.ImagePhaseSucceeded)
	if got := leaderNextNode(ctx, t, w, nodes, j.handed, j.job.UID); got != j.n3 {
		t.Fatalf("next node %s, want %s", got, j.n3)
	}
	leaderPull(ctx, t, c, w, j.n3, j.repo, j.tag, true)
	done := framework.WaitImagePullJobFinished(ctx, t, c, j.job.Namespace, j.job.Name, leaderStepTimeout)
	if s := done.Status; s.Desired != 3 || s.Succeeded != 3 || s.Failed != 0 || s.Active != 0 || !strings.HasPrefix(s.Message, "Completed") {
		t.Errorf("want a Completed job with desired=3 succeeded=3 failed=0; got %s", framework.DescribeImagePullJob(ctx, c, done))
	}
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("parallelism 1 not respected: %v; %s", v, leaderDescribeNodes(w, nodes))
	}
	for _, n := range nodes {
		if runs, versions := leaderHandOuts(w, n, j.job.UID); runs != 1 || len(versions) != 1 {
			t.Errorf("node %s was asked %d times with versions %v, want once: %s", n, runs, versions, w.Summary(n))
		}
	}
}

// leaderScale sets the replicas of Deployment kruise-controller to n.
func leaderScale(ctx context.Context, f *framework.Framework, n int32) error {
	_, err := f.Client.AppsV1().Deployments(framework.KruiseNamespace).UpdateScale(ctx, leaderDeployment,
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: leaderDeployment, Namespace: framework.KruiseNamespace},
			Spec: autoscalingv1.ScaleSpec{Replicas: n}}, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("scaling Deployment %s to %d: %w", leaderDeployment, n, err)
	}
	return nil
}

// leaderWaitNoneServes waits until no kruise-controller pod is left and no endpoint is behind
// the webhook Service: the API server can call neither a webhook nor /convert.
func leaderWaitNoneServes(ctx context.Context, t *testing.T, f *framework.Framework) {
	t.Helper()
	framework.WaitFor(ctx, t, 2*time.Minute, "no kruise-controller pod and no endpoint behind "+certs.ServiceName,
		func(ctx context.Context) (bool, string, error) {
			pods, err := f.ControllerPods(ctx)
			if err != nil {
				return false, "", err
			}
			slices, err := f.Client.DiscoveryV1().EndpointSlices(framework.KruiseNamespace).List(ctx,
				metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + certs.ServiceName})
			if err != nil {
				return false, "", err
			}
			endpoints := 0
			for _, s := range slices.Items {
				endpoints += len(s.Endpoints)
			}
			return len(pods) == 0 && endpoints == 0, fmt.Sprintf("%d pod(s), %d endpoint(s)", len(pods), endpoints), nil
		})
}

// leaderAllDown takes every kruise-controller replica away at once (scaled to 0, until nothing
// serves) and returns up, which asks for replicas again: each new replica then starts while no
// other serves the webhooks or /convert, as after a node failure or a crash of them all. The
// replicas are restored should the test end before up is called.
func leaderAllDown(ctx context.Context, t *testing.T, f *framework.Framework, replicas int32) (up func()) {
	t.Helper()
	restored := false
	t.Cleanup(func() {
		if restored {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := leaderScale(ctx, f, replicas); err != nil {
			t.Errorf("restoring the controller: %v", err)
		}
	})
	if err := leaderScale(ctx, f, 0); err != nil {
		t.Fatal(err)
	}
	leaderWaitNoneServes(ctx, t, f)
	return func() {
		t.Helper()
		if err := leaderScale(ctx, f, replicas); err != nil {
			t.Fatal(err)
		}
		restored = true
	}
}
