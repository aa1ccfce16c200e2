package sidecarset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func queued(f *fixture) []string {
	var out []string
	for f.ctrl.queue.Len() > 0 {
		key, _ := f.ctrl.queue.Get()
		out = append(out, key)
		f.ctrl.queue.Done(key)
	}
	return out
}

func TestPodEventsQueueTheSidecarSetsConcerned(t *testing.T) {
	onlyOther := gen.SidecarSetFrom(sidecarSetAt("1"), func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "other"}}
	})
	f := newFixture(t, onlyOther)
	selected := gen.Pod("a", gen.SetPodNamespace("other"), gen.AddPodLabels(map[string]string{appLabel: appValue}))
	f.ctrl.podAdded(selected)
	assert.Equal(t, []string{"log"}, queued(f), "selected by labels and namespace")

	f.ctrl.podAdded(gen.PodFrom(selected, gen.SetPodNamespace(podNS)))
	assert.Empty(t, queued(f), "a namespace the SidecarSet does not select")

	injected := gen.Pod("b", gen.SetPodNamespace(podNS), gen.AddPodAnnotations(map[string]string{sidecarrules.InjectedListAnnotation: "gone,log"}))
	f.ctrl.podDeleted(injected)
	assert.ElementsMatch(t, []string{"gone", "log"}, queued(f), "a pod that records an injection concerns its SidecarSets")

	f.ctrl.revisionChanged(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: kruiseNS, Labels: map[string]string{sidecarrules.NameLabel: "log"}}})
	f.ctrl.revisionChanged(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Labels: map[string]string{sidecarrules.NameLabel: "x"}}})
	assert.Equal(t, []string{"log"}, queued(f), "only revisions in kruise's namespace")
}
