package sidecarinjection

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// A SidecarSet the routing covers as just admitted, which the cache lacks (or has at an older
// generation), is read live: the pod applied right after it gets its sidecars. Otherwise the
// cache alone is read.
func TestAdmitReadsLiveWhileTheCacheLacksAnAdmittedSidecarSet(t *testing.T) {
	old := sidecarSet("log")
	old.Generation = 1
	newer := sidecarSet("log", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Containers[0].Image = "agent:2" })
	newer.Generation = 2
	mesh := sidecarSet("mesh")
	mesh.Generation = 1
	var reads atomic.Int32
	pending := sidecarrules.PendingSet{}
	in := &Injector{
		SidecarSets: fixed{sets: []*appsv1beta1.SidecarSet{old}},
		Namespaces:  noNamespaces{},
		Pending:     func() sidecarrules.PendingSet { return pending },
		Fresh: func(context.Context) ([]*appsv1beta1.SidecarSet, error) {
			reads.Add(1)
			return []*appsv1beta1.SidecarSet{newer, mesh}, nil
		},
	}
	images := func() []string {
		req := podRequest(t, admissionv1.Create, map[string]string{"app": "web"})
		res := in.Admit(context.Background(), req)
		require.True(t, res.Allowed, "%+v", res)
		var out []string
		for _, c := range patched(t, req, res.Patch).Spec.Containers {
			out = append(out, c.Name+"="+c.Image)
		}
		return out
	}
	assert.Equal(t, []string{"log-agent=agent:1", "main=main:1"}, images(), "nothing pending: the cache")
	assert.Zero(t, reads.Load())

	pending["mesh"] = sidecarrules.Pending{Generation: 1}
	assert.Equal(t, []string{"log-agent=agent:2", "mesh-agent=agent:1", "main=main:1"}, images(), "mesh not cached: read live")
	delete(pending, "mesh")
	pending["log"] = sidecarrules.Pending{Generation: 2}
	images()
	assert.EqualValues(t, 2, reads.Load(), "log cached at generation 1 only: read live")

	pending["log"] = sidecarrules.Pending{Generation: 1}
	images()
	assert.EqualValues(t, 2, reads.Load(), "the cache shows what was admitted: not read")
}

// Callers share reads, never one started before they arrived, and at most one runs at a time.
func TestFreshReaderSharesReads(t *testing.T) {
	release := make(chan struct{})
	var started, running, most atomic.Int32
	f := &freshReader{list: func(context.Context) ([]*appsv1beta1.SidecarSet, error) {
		n := started.Add(1)
		if r := running.Add(1); r > most.Load() {
			most.Store(r)
		}
		defer running.Add(-1)
		if n == 1 {
			<-release // the first read waits until the others have arrived
		}
		return []*appsv1beta1.SidecarSet{sidecarSet("read")}, nil
	}}
	first := make(chan error, 1)
	go func() { _, err := f.List(context.Background()); first <- err }()
	require.Eventually(t, func() bool { return started.Load() == 1 }, 5*time.Second, time.Millisecond)

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets, err := f.List(context.Background())
			assert.NoError(t, err)
			assert.Len(t, sets, 1)
		}()
	}
	// The 20 arrived during the first read: they wait for the second, which has not started.
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.next != nil && f.next.waiters == 20
	}, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 1, started.Load(), "no read starts while one runs")
	close(release)
	require.NoError(t, <-first)
	wg.Wait()
	assert.EqualValues(t, 2, started.Load(), "the 20 callers shared one read, started after the first")
	assert.EqualValues(t, 1, most.Load())
}
