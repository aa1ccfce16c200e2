package ownership

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPodEventsRegister(t *testing.T) {
	kube := fake.NewClientset(pod("orphan", "db", nil))
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().Pods().Informer()
	adopters := make(chan string, 1)
	e := PodEvents{
		Kind:     kind,
		Get:      func(string, string) (metav1.Object, error) { return owner("u1"), nil },
		Adopters: func(orphan metav1.Object) { adopters <- orphan.GetName() },
	}
	require.NoError(t, e.Register(inf))

	// The owner index is in place.
	require.NoError(t, inf.GetIndexer().Add(pod("mine", "db", controllerRef("apps.kruise.io/v1beta1", "StatefulSet", "u1"))))
	got, err := Owned[*corev1.Pod](inf.GetIndexer(), kind, owner("u1"))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "mine", got[0].Name)
	require.NoError(t, inf.GetIndexer().Delete(got[0]))

	// So is the handler: the orphan the informer lists goes to its adopters.
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	select {
	case name := <-adopters:
		assert.Equal(t, "orphan", name)
	case <-time.After(30 * time.Second): // a guard against hanging, not a synchronisation
		t.Fatal("the registered handler never saw the orphan")
	}

	// A second registration on the same informer is refused (the index exists).
	assert.ErrorContains(t, e.Register(inf), "adding the pod owner index")
}
