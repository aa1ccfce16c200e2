package broadcastjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newJob(mods ...func(*v1beta1.BroadcastJob)) *v1beta1.BroadcastJob {
	j := &v1beta1.BroadcastJob{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "job-uid"},
		Spec: v1beta1.BroadcastJobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
			CompletionPolicy: v1beta1.CompletionPolicy{Type: v1beta1.Always},
			FailurePolicy:    v1beta1.FailurePolicy{Type: v1beta1.FailurePolicyTypeFailFast},
		},
	}
	for _, m := range mods {
		m(j)
	}
	return j
}

func mkNode(name string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "a"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func tainted(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

// mkPod is the job's pod for node, created at t0+age seconds, in phase (bound when not Pending).
func mkPod(name, node string, phase corev1.PodPhase, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := NewPod(newJob(), node)
	p.Name = name
	p.CreationTimestamp = metav1.Time{Time: t0}
	p.Status.Phase = phase
	if phase != corev1.PodPending {
		p.Spec.NodeName = node
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func counts(s v1beta1.BroadcastJobStatus) [4]int32 {
	return [4]int32{s.Desired, s.Active, s.Succeeded, s.Failed}
}

func TestDecideCreatesOnEveryFittingNode(t *testing.T) {
	nodes := []*corev1.Node{
		mkNode("n3"), mkNode("n1"),
		mkNode("tainted", tainted("dedicated", corev1.TaintEffectNoSchedule)),
		mkNode("notready", tainted(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)),
		mkNode("cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		mkNode("small", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("100m") }),
		mkNode("other", func(n *corev1.Node) { n.Labels["pool"] = "b" }),
	}
	job := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	})
	p := Decide(job, nodes, nil, t0)
	assert.Equal(t, []string{"n1", "n3"}, p.Create, "in name order; no daemon tolerations, no cordoned or too small node")
	assert.Equal(t, [4]int32{2, 0, 0, 0}, counts(p.Status))
	assert.Equal(t, v1beta1.PhaseRunning, p.Status.Phase)
	assert.Equal(t, t0, p.Status.StartTime.Time)

	job.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
	assert.Contains(t, Decide(job, nodes, nil, t0).Create, "cordoned", "a template tolerating unschedulable goes to a cordoned node")
}

func TestDecideParallelism(t *testing.T) {
	var nodes []*corev1.Node
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, mkNode(n))
	}
	running := []*corev1.Pod{mkPod("p-a", "a", corev1.PodRunning)}
	job := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(2)) })
	p := Decide(job, nodes, running, t0)
	assert.Equal(t, []string{"b"}, p.Create, "two at once, one running")

	job.Spec.Parallelism = ptr.To(intstr.FromString("50%"))
	assert.Equal(t, []string{"b", "c"}, Decide(job, nodes, running, t0).Create, "50% of 5 rounds up to 3")

	done := []*corev1.Pod{mkPod("p-a", "a", corev1.PodSucceeded)}
	job.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	assert.Equal(t, []string{"b"}, Decide(job, nodes, done, t0).Create, "an ended pod frees its slot")
}

func TestDecideOnePodPerNode(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")}
	pods := []*corev1.Pod{
		mkPod("p-a", "a", corev1.PodFailed),
		mkPod("p-b", "b", corev1.PodRunning, deleting),
		mkPod("p-c1", "c", corev1.PodRunning),
		mkPod("p-c2", "c", corev1.PodRunning, func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{Time: t0.Add(time.Second)} }),
	}
	job := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.FailurePolicy.Type = v1beta1.FailurePolicyTypeContinue })
	p := Decide(job, nodes, pods, t0)
	assert.Empty(t, p.Create, "an ended pod is never replaced; a terminating one is waited for")
	assert.Equal(t, []string{"p-c2"}, names(p.Delete), "the newer of two pods on a node goes")
	assert.Equal(t, [4]int32{3, 1, 0, 1}, counts(p.Status), "the pod being deleted counts nowhere")
	assert.Empty(t, p.Status.Conditions, "not complete while node b's pod terminates")
}

func TestDecideNodesGoneOrChanged(t *testing.T) {
	job := newJob()
	pods := []*corev1.Pod{
		mkPod("gone-running", "gone", corev1.PodRunning),
		mkPod("gone-done", "gone2", corev1.PodSucceeded),
		mkPod("relabelled", "relabelled", corev1.PodRunning),
		mkPod("noschedule-bound", "ns1", corev1.PodRunning),
		mkPod("noschedule-pending", "ns2", corev1.PodPending),
		mkPod("notready-tolerated", "nr", corev1.PodRunning, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}
		}),
		mkPod("evicting", "ne", corev1.PodRunning),
	}
	job.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
	nodes := []*corev1.Node{
		mkNode("relabelled", func(n *corev1.Node) { n.Labels["pool"] = "b" }),
		mkNode("ns1", tainted("x", corev1.TaintEffectNoSchedule)),
		mkNode("ns2", tainted("x", corev1.TaintEffectNoSchedule)),
		mkNode("nr", tainted(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)),
		mkNode("ne", tainted("x", corev1.TaintEffectNoExecute)),
	}
	p := Decide(job, nodes, pods, t0)
	assert.ElementsMatch(t, []string{"gone-running", "relabelled", "noschedule-pending", "evicting"}, names(p.Delete))
	assert.Empty(t, p.Create)
	// Desired: ns1 and nr keep their pods. Active: those two; succeeded: the pod of the gone node
	// while it exists.
	assert.Equal(t, [4]int32{2, 2, 1, 0}, counts(p.Status))
}

func TestDecideFailurePolicies(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")}
	pods := []*corev1.Pod{mkPod("p-a", "a", corev1.PodFailed), mkPod("p-b", "b", corev1.PodRunning)}

	p := Decide(newJob(), nodes, pods, t0)
	assert.Equal(t, v1beta1.PhaseFailed, p.Status.Phase, "FailFast")
	assert.Equal(t, []string{"p-b"}, names(p.Delete), "a failing job stops its pods")
	assert.Empty(t, p.Create)
	assert.Equal(t, v1beta1.JobFailed, p.Status.Conditions[0].Type)
	assert.Equal(t, t0, p.Status.CompletionTime.Time)
	assert.Equal(t, [4]int32{3, 0, 0, 1}, counts(p.Status))

	cont := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.FailurePolicy.Type = v1beta1.FailurePolicyTypeContinue })
	p = Decide(cont, nodes, pods, t0)
	assert.Equal(t, v1beta1.PhaseRunning, p.Status.Phase, "Continue")
	assert.Equal(t, []string{"c"}, p.Create)

	pause := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.FailurePolicy.Type = v1beta1.FailurePolicyTypePause })
	p = Decide(pause, nodes, pods, t0)
	assert.Equal(t, v1beta1.PhasePaused, p.Status.Phase, "Pause")
	assert.Empty(t, p.Create)
	assert.Len(t, p.Events, 1)
	pause.Status = p.Status
	p = Decide(pause, nodes, pods, t0)
	assert.Equal(t, v1beta1.PhasePaused, p.Status.Phase, "stays paused")
	assert.Empty(t, p.Events, "no Event again")
}

func TestDecideRestartLimit(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a"), mkNode("b")}
	crashing := mkPod("p-a", "a", corev1.PodRunning, func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", RestartCount: 1}}
	})
	job := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.FailurePolicy = v1beta1.FailurePolicy{Type: v1beta1.FailurePolicyTypeContinue, RestartLimit: 2}
	})
	done := mkPod("p-b", "b", corev1.PodSucceeded)
	p := Decide(job, nodes, []*corev1.Pod{crashing, done}, t0)
	assert.Equal(t, [4]int32{2, 0, 1, 1}, counts(p.Status), "3 restarts > 2: failed")
	assert.Equal(t, v1beta1.PhaseCompleted, p.Status.Phase)
	assert.Equal(t, []string{"p-a"}, names(p.Delete), "a completed job stops a failed pod still running")

	job.Spec.FailurePolicy.RestartLimit = 3
	p = Decide(job, nodes, []*corev1.Pod{crashing, done}, t0)
	assert.Equal(t, [4]int32{2, 1, 1, 0}, counts(p.Status), "3 restarts, limit 3: active")
}

func TestDecideCompletionDeadlineTTL(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a"), mkNode("b")}
	done := []*corev1.Pod{mkPod("p-a", "a", corev1.PodSucceeded), mkPod("p-b", "b", corev1.PodSucceeded)}
	job := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](30)
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](100)
	})
	p := Decide(job, nodes, done, t0)
	assert.Equal(t, v1beta1.PhaseCompleted, p.Status.Phase)
	assert.Equal(t, v1beta1.JobComplete, p.Status.Conditions[0].Type)
	assert.Equal(t, 30*time.Second, p.Requeue, "the TTL, exactly")
	assert.Equal(t, [4]int32{2, 0, 2, 0}, counts(p.Status))

	job.Status = p.Status
	p = Decide(job, nodes, done, t0.Add(10*time.Second))
	assert.False(t, p.DeleteJob)
	assert.Equal(t, 20*time.Second, p.Requeue)
	assert.True(t, Decide(job, nodes, done, t0.Add(30*time.Second)).DeleteJob)

	running := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](100)
		j.Status.StartTime = &metav1.Time{Time: t0}
	})
	active := []*corev1.Pod{mkPod("p-a", "a", corev1.PodRunning)}
	p = Decide(running, nodes, active, t0.Add(40*time.Second))
	assert.Equal(t, 60*time.Second, p.Requeue, "the deadline, exactly")
	p = Decide(running, nodes, active, t0.Add(100*time.Second))
	assert.Equal(t, v1beta1.PhaseFailed, p.Status.Phase)
	assert.Equal(t, []string{"p-a"}, names(p.Delete))
	assert.Equal(t, ReasonDeadline, p.Events[0].Reason)

	assert.Empty(t, Decide(newJob(), nil, nil, t0).Status.Conditions, "no node: not complete")
}

func TestDecideNeverAndPaused(t *testing.T) {
	never := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.CompletionPolicy.Type = v1beta1.Never })
	done := []*corev1.Pod{mkPod("p-a", "a", corev1.PodSucceeded)}
	p := Decide(never, []*corev1.Node{mkNode("a")}, done, t0)
	assert.Empty(t, p.Status.Conditions, "Never does not complete")
	assert.Equal(t, v1beta1.PhaseRunning, p.Status.Phase)
	p = Decide(never, []*corev1.Node{mkNode("a"), mkNode("late")}, done, t0)
	assert.Equal(t, []string{"late"}, p.Create, "a node that joins later gets a pod")

	paused := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.Paused = true })
	p = Decide(paused, []*corev1.Node{mkNode("a")}, nil, t0)
	assert.Equal(t, v1beta1.PhasePaused, p.Status.Phase)
	assert.Empty(t, p.Create)
	paused.Spec.Paused = false
	paused.Status = p.Status
	p = Decide(paused, []*corev1.Node{mkNode("a")}, nil, t0)
	assert.Equal(t, v1beta1.PhaseRunning, p.Status.Phase)
	assert.Equal(t, []string{"a"}, p.Create)
}

func TestNewPod(t *testing.T) {
	job := newJob(func(j *v1beta1.BroadcastJob) { j.Spec.Template.Labels = map[string]string{"app": "x"} })
	p := NewPod(job, "n1")
	assert.Equal(t, "job-", p.GenerateName)
	assert.Equal(t, map[string]string{"app": "x", v1beta1.BroadcastJobNameLabel: "job", v1beta1.BroadcastJobControllerUIDLabel: "job-uid"}, p.Labels)
	ref := metav1.GetControllerOf(p)
	assert.Equal(t, "BroadcastJob", ref.Kind)
	assert.True(t, *ref.BlockOwnerDeletion)
	assert.Equal(t, "n1", nodefit.TargetNode(p))
	assert.Nil(t, job.Spec.Template.Spec.Affinity, "the template is not changed")
	assert.Empty(t, p.Spec.NodeName, "the scheduler binds it")
}
