package daemon

import (
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
	"github.com/nodekruise/kruise/pkg/process/features"
)

func TestComponentNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range components {
		assert.NotEmpty(t, e.name)
		assert.False(t, seen[e.name], "component %q listed twice", e.name)
		seen[e.name] = true
		assert.NotNil(t, e.build, e.name)
	}
}

// The image puller starts on its own informers: CRRs the daemon may not
// list (their informer never syncs) hold back the CRR executor and the
// heartbeat, not the pre-pulls.
func TestImagePullerDoesNotWaitForTheCRRExecutor(t *testing.T) {
	rt := critest.NewFakeRuntime()
	sock := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	critest.Serve(t, sock, rt)

	created := metav1.Now()
	kruise := kruisefake.NewSimpleClientset(&appsv1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Spec: appsv1beta1.NodeImageSpec{Images: map[string]appsv1beta1.ImageSpec{
			"registry.example.com/app": {Tags: []appsv1beta1.ImageTagSpec{{Tag: "v1", Version: 1, CreatedAt: &created}}},
		}},
	})
	kruise.PrependReactor("list", "containerrecreaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps.kruise.io", Resource: "containerrecreaterequests"}, "",
			errors.New("not in the daemon's ClusterRole"))
	})
	client := fake.NewClientset(node("node-a"))
	d := runInBackground(t, testOptions("unix://"+sock), deps{client: clientset.New(client), kruiseClient: clientset.NewKruise(kruise),
		clock: clock.RealClock{}, heartbeatClock: clock.RealClock{}})

	require.Eventually(t, func() bool {
		calls := rt.Images().PullCalls()
		return len(calls) > 0 && calls[0].Image == "registry.example.com/app:v1"
	}, 10*time.Second, 10*time.Millisecond, "the NodeImage's image is pulled")

	code, body := d.get(t, "/readyz?verbose")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "[+]imagepull ok")
	assert.Contains(t, body, "[-]crr failed: informers have not synced: containerrecreaterequests")
	assert.False(t, heartbeatLease(t, client), "no heartbeat while the CRRs cannot be executed")
}

// The env restarter is one entry, on while its feature gate is.
func TestEnvRestarterFollowsItsGate(t *testing.T) {
	for _, on := range []bool{true, false} {
		gate := features.New()
		require.NoError(t, gate.SetFromMap(map[string]bool{string(features.InPlaceUpdateEnvFromMetadata): on}))
		l := newLoop(components, &env{deps: deps{features: gate}, opts: &Options{}})
		var names []string
		for _, en := range l.entries {
			names = append(names, en.name)
		}
		assert.Equal(t, on, slices.Contains(names, "envrestart"), "gate %t: %v", on, names)
	}
}

// The node prober runs with the apps.kruise.io client and either of the
// gates that put probes in a NodePodProbe.
func TestNodeProberFollowsItsGates(t *testing.T) {
	kruise := clientset.NewKruise(kruisefake.NewSimpleClientset())
	for _, tc := range []struct {
		marker, liveness, client, want bool
	}{
		{marker: true, client: true, want: true},
		{liveness: true, client: true, want: true},
		{marker: true, liveness: true, client: true, want: true},
		{client: true, want: false},
		{marker: true, liveness: true, want: false},
	} {
		gate := features.New()
		require.NoError(t, gate.SetFromMap(map[string]bool{string(features.PodProbeMarkerGate): tc.marker,
			string(features.EnhancedLivenessProbe): tc.liveness}))
		d := deps{features: gate}
		if tc.client {
			d.kruiseClient = kruise
		}
		l := newLoop(components, &env{deps: d, opts: &Options{}})
		var names []string
		for _, en := range l.entries {
			names = append(names, en.name)
		}
		assert.Equal(t, tc.want, slices.Contains(names, "podprobe"), "%+v: %v", tc, names)
	}
}
