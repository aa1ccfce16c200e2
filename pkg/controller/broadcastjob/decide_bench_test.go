package broadcastjob

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// BenchmarkDecide5000Nodes is one pass over a job on 5,000 nodes, each with its running pod: the
// per-reconcile cost at the scale the BroadcastJob benchmark runs (bench/).
func BenchmarkDecide5000Nodes(b *testing.B) {
	job := newJob(func(j *v1beta1.BroadcastJob) {
		j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
		j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "kwok", Operator: corev1.TolerationOpExists}}
	})
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 5000 {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, mkNode(name, tainted("kwok", corev1.TaintEffectNoSchedule)))
		pods = append(pods, mkPod("pod-"+name, name, corev1.PodRunning))
	}
	b.ResetTimer()
	for b.Loop() {
		p := Decide(job, nodes, pods, t0)
		if p.Status.Desired != 5000 || p.Status.Active != 5000 {
			b.Fatalf("status %+v", p.Status)
		}
	}
}
