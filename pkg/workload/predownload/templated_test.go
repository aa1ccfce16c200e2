package predownload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestTemplatedMove(t *testing.T) {
	cur := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{revision.HashLabel: "1"}}}
	upd := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Labels: map[string]string{revision.HashLabel: "2"}}}
	updTemplate := &corev1.PodTemplateSpec{}
	h := &revision.Templated{Revisions: &revision.Revisions{All: []*appsv1.ControllerRevision{cur, upd}, Current: cur, Update: upd},
		Templates: map[string]*corev1.PodTemplateSpec{"web-2": updTemplate}}
	ready := func(name, rev string) *corev1.Pod {
		return gen.Pod(name, gen.AddPodLabels(map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}), gen.SetPodPhase(corev1.PodRunning),
			gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	}
	pods := []*corev1.Pod{ready("a", "web-2"), ready("b", "web-1"), gen.Pod("c", gen.AddPodLabels(map[string]string{appsv1.ControllerRevisionHashLabelKey: "web-2"}))}

	assert.Equal(t, Move{Current: cur, Update: upd, UpdateTemplate: updTemplate, UpdatedReady: 1}, TemplatedMove(h, pods))
	assert.Equal(t, "2", ServedHash(h))
	h.Current = upd
	assert.Equal(t, "", ServedHash(h), "a finished update has no jobs to serve")
}
