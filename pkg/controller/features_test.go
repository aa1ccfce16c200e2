package controller

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/process/features"
)

func gateFrom(t *testing.T, flag string) featuregate.FeatureGate {
	t.Helper()
	g := features.New()
	require.NoError(t, features.NewFlag(g).Set(flag))
	return g
}

func TestSelectEnabled(t *testing.T) {
	all := []string{"containerrecreaterequest", "podreadiness", "sidecarterminator", "nodeimage", "podprobemarker", "pullsecrets", "imagepulljob", "imagelistpulljob", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadspread-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "workloadspread", "broadcastjob", "advancedcronjob", "ephemeraljob", "nodepodprobe", "uniteddeployment", "persistentpodstate"}
	tests := []struct {
		gates    string
		enabled  []string
		disabled map[string]featuregate.Feature
	}{
		{gates: "", enabled: all, disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate, "enhancedliveness": features.EnhancedLivenessProbe}},
		{gates: "PodWebhook=false,DaemonWatchingPod=false", enabled: all, disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate, "enhancedliveness": features.EnhancedLivenessProbe}},
		{gates: "KruiseDaemon=false", enabled: []string{"podreadiness", "sidecarterminator", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadspread-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "workloadspread", "broadcastjob", "advancedcronjob", "ephemeraljob", "uniteddeployment", "persistentpodstate"},
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate,
				"containerrecreaterequest": features.KruiseDaemon, "nodeimage": features.KruiseDaemon, "podprobemarker": features.KruiseDaemon,
				"pullsecrets": features.KruiseDaemon, "imagepulljob": features.KruiseDaemon, "imagelistpulljob": features.KruiseDaemon,
				"nodepodprobe":     features.KruiseDaemon,
				"enhancedliveness": features.KruiseDaemon,
			}},
		{gates: "ImagePullJobGate=false", enabled: []string{"containerrecreaterequest", "podreadiness", "sidecarterminator", "nodeimage", "podprobemarker", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadspread-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "workloadspread", "broadcastjob", "advancedcronjob", "ephemeraljob", "nodepodprobe", "uniteddeployment", "persistentpodstate"},
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate,
				"pullsecrets": features.ImagePullJobGate, "imagepulljob": features.ImagePullJobGate, "imagelistpulljob": features.ImagePullJobGate,
				"enhancedliveness": features.EnhancedLivenessProbe,
			}},
		{gates: "SidecarTerminator=false", enabled: []string{"containerrecreaterequest", "podreadiness", "nodeimage", "podprobemarker", "pullsecrets", "imagepulljob", "imagelistpulljob", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadspread-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "workloadspread", "broadcastjob", "advancedcronjob", "ephemeraljob", "nodepodprobe", "uniteddeployment", "persistentpodstate"},
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate, "sidecarterminator": features.SidecarTerminator, "enhancedliveness": features.EnhancedLivenessProbe}},
		{gates: "AllBeta=false,SidecarTerminator=true", enabled: []string{"podreadiness", "sidecarterminator", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "broadcastjob", "advancedcronjob", "ephemeraljob", "uniteddeployment", "persistentpodstate"},
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate,
				"containerrecreaterequest": features.KruiseDaemon, "nodeimage": features.KruiseDaemon, "podprobemarker": features.KruiseDaemon,
				"pullsecrets": features.ImagePullJobGate, "imagepulljob": features.ImagePullJobGate, "imagelistpulljob": features.ImagePullJobGate,
				"workloadspread-scope": features.WorkloadSpread, "workloadspread": features.WorkloadSpread,
				"nodepodprobe":     features.KruiseDaemon,
				"enhancedliveness": features.KruiseDaemon,
			}},
		// Gate WorkloadSpread off: its controller is not built (and logged as disabled, as the others).
		{gates: "WorkloadSpread=false", enabled: []string{"containerrecreaterequest", "podreadiness", "sidecarterminator", "nodeimage", "podprobemarker", "pullsecrets", "imagepulljob", "imagelistpulljob", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "broadcastjob", "advancedcronjob", "ephemeraljob", "nodepodprobe", "uniteddeployment", "persistentpodstate"},
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate, "workloadspread-scope": features.WorkloadSpread, "workloadspread": features.WorkloadSpread,
				"enhancedliveness": features.EnhancedLivenessProbe}},
		// Gate PodProbeMarkerGate off: no pod is marked (the daemon runs no probe either).
		{gates: "PodProbeMarkerGate=false", enabled: slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "nodepodprobe" }),
			disabled: map[string]featuregate.Feature{"resourcedistribution": features.ResourceDistributionGate, "nodepodprobe": features.PodProbeMarkerGate, "enhancedliveness": features.EnhancedLivenessProbe}},
		// Gate ResourceDistributionGate on (Alpha, off by default): its controller is built.
		{gates: "ResourceDistributionGate=true", enabled: append(slices.Clone(all), "resourcedistribution"),
			disabled: map[string]featuregate.Feature{"enhancedliveness": features.EnhancedLivenessProbe}},
	}
	for _, tc := range tests {
		t.Run(tc.gates, func(t *testing.T) {
			enabled, disabled := SelectEnabled(gateFrom(t, tc.gates), builders)
			var names []string
			for _, e := range enabled {
				names = append(names, e.Name)
			}
			assert.Equal(t, tc.enabled, names)
			got := map[string]featuregate.Feature{}
			for _, d := range disabled {
				got[d.Name] = d.Gate
			}
			if tc.disabled == nil {
				tc.disabled = map[string]featuregate.Feature{}
			}
			assert.Equal(t, tc.disabled, got)
		})
	}
}

func TestValidateSidecarTerminationNeedsDaemonForCRR(t *testing.T) {
	tests := []struct {
		gates, mechanism string
		err              string
	}{
		{gates: "", mechanism: "crr"},
		{gates: "KruiseDaemon=false", mechanism: "phase"},
		{gates: "KruiseDaemon=false", mechanism: "crr", err: "--sidecar-termination=crr stops sidecars through ContainerRecreateRequests"},
		// The terminator does not run, so its mechanism does not matter.
		{gates: "KruiseDaemon=false,SidecarTerminator=false", mechanism: "crr"},
	}
	for _, tc := range tests {
		t.Run(tc.gates+"/"+tc.mechanism, func(t *testing.T) {
			o := NewOptions()
			o.Features = gateFrom(t, tc.gates)
			o.SidecarTermination = tc.mechanism
			err := o.Validate()
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			assert.ErrorContains(t, err, "KruiseDaemon=false")
		})
	}
}

// TestDisabledControllersAreNotBuilt runs the real controller table with the
// daemon gate off: only the controllers that need no daemon are built, and
// nothing lists or watches what the others would (CRRs, image kinds, secrets,
// leases).
func TestDisabledControllersAreNotBuilt(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	client := fake.NewClientset()
	kruiseClient := kruisefake.NewSimpleClientset()
	o := testOptions()
	o.LeaderElect = false
	o.Features = gateFrom(t, "KruiseDaemon=false")

	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, deps{client: client, kruiseClient: kruiseClient, leases: client.CoordinationV1(),
			identity: "test", builders: builders, listening: func(net.Addr) {}})
	}()
	logged := func(msg string) [][]any {
		var out [][]any
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message == msg {
				out = append(out, e.ParameterKVList)
			}
		}
		return out
	}
	// Logged once every informer has synced, so every informer that was
	// started has listed by now.
	require.Eventually(t, func() bool { return len(logged("Started controllers")) == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, [][]any{{"controllers", []string{"podreadiness", "sidecarterminator", "launchpriority", "cloneset", "daemonset", "statefulset", "sidecarset", "sidecarset-scope", "podunavailablebudget-scope", "workloadspread-scope", "workloadmetrics", "storage-version-migrator", "podunavailablebudget", "workloadspread", "broadcastjob", "advancedcronjob", "ephemeraljob", "uniteddeployment", "persistentpodstate"}}}, logged("Started controllers"))
	assert.ElementsMatch(t, [][]any{
		{"controller", "containerrecreaterequest", "gate", features.KruiseDaemon},
		{"controller", "enhancedliveness", "gate", features.KruiseDaemon},
		{"controller", "nodeimage", "gate", features.KruiseDaemon},
		{"controller", "podprobemarker", "gate", features.KruiseDaemon},
		{"controller", "pullsecrets", "gate", features.KruiseDaemon},
		{"controller", "imagepulljob", "gate", features.KruiseDaemon},
		{"controller", "imagelistpulljob", "gate", features.KruiseDaemon},
		{"controller", "nodepodprobe", "gate", features.KruiseDaemon},
		{"controller", "resourcedistribution", "gate", features.ResourceDistributionGate},
	}, logged("Controller disabled by a feature gate"))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("controller did not stop")
	}
	kruiseListed := map[string]bool{}
	for _, a := range kruiseClient.Actions() {
		kruiseListed[a.GetResource().Resource] = true
	}
	assert.Equal(t, map[string]bool{"clonesets": true, "daemonsets": true, "statefulsets": true, "sidecarsets": true, "podunavailablebudgets": true, "workloadspreads": true, "broadcastjobs": true, "advancedcronjobs": true, "ephemeraljobs": true, "uniteddeployments": true, "persistentpodstates": true}, kruiseListed,
		"of the kruise kinds only the workloads, the budgets, the spreads and the jobs, which need no daemon")
	listed := map[string]bool{}
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			listed[a.GetResource().Resource] = true
		}
	}
	assert.Equal(t, map[string]bool{"pods": true, "nodes": true, "persistentvolumeclaims": true, "controllerrevisions": true, "namespaces": true,
		"replicasets": true, "deployments": true, "statefulsets": true, "jobs": true}, listed)
}

// The PodUnavailableBudget controller runs when either of its gates is on (Entry gates are all
// required, so its builder decides), and watches nothing with both off.
func TestPodUnavailableBudgetBuiltWithEitherGate(t *testing.T) {
	for gates, want := range map[string]bool{
		"":                                     true,
		"PodUnavailableBudgetDeleteGate=false": false,
		"PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=true": true,
	} {
		t.Run(gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, gates)
			d := Deps{Client: fake.NewClientset(), KruiseClient: kruisefake.NewSimpleClientset(), Options: o}
			d.InformerFactory = informers.NewSharedInformerFactory(d.Client, 0)
			d.KruiseInformerFactory = kruiseinformers.NewSharedInformerFactory(d.KruiseClient, 0)
			c, err := buildPodUnavailableBudget(d)
			require.NoError(t, err)
			_, idles := c.(idle)
			assert.Equal(t, want, !idles)
		})
	}
}

// The NodePodProbe controller runs with PodProbeMarkerGate or EnhancedLivenessProbe (its entry
// needs KruiseDaemon; its builder decides the rest), and reads PodProbeMarkers only with the first.
func TestPodProbeMarkerBuiltWithEitherGate(t *testing.T) {
	for gates, want := range map[string]struct{ runs, markers bool }{
		"":                         {runs: true, markers: true},
		"PodProbeMarkerGate=false": {},
		"PodProbeMarkerGate=false,EnhancedLivenessProbe=true": {runs: true},
		"EnhancedLivenessProbe=true":                          {runs: true, markers: true},
	} {
		t.Run(gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, gates)
			d := Deps{Client: fake.NewClientset(), KruiseClient: kruisefake.NewSimpleClientset(), Options: o}
			d.InformerFactory = informers.NewSharedInformerFactory(d.Client, 0)
			d.KruiseInformerFactory = kruiseinformers.NewSharedInformerFactory(d.KruiseClient, 0)
			c, err := buildPodProbeMarker(d)
			require.NoError(t, err)
			_, idles := c.(idle)
			assert.Equal(t, want.runs, !idles)
			if want.runs {
				assert.Equal(t, map[string]bool{"NodePodProbe": true, "PodProbeMarker": want.markers}, kruiseInformed(t, d.KruiseInformerFactory))
			}
		})
	}
}

// kruiseInformed starts the factory and reports which of the NodePodProbe and PodProbeMarker
// informers it made.
func kruiseInformed(t *testing.T, f kruiseinformers.SharedInformerFactory) map[string]bool {
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	out := map[string]bool{"NodePodProbe": false, "PodProbeMarker": false}
	for typ, synced := range f.WaitForCacheSync(stop) {
		require.True(t, synced)
		if _, ok := out[typ.Elem().Name()]; ok {
			out[typ.Elem().Name()] = true
		}
	}
	return out
}

func TestGatedBuilderIsNotCalled(t *testing.T) {
	var built atomic.Int32
	on := newFake("on")
	entries := []Entry{
		{Name: "off", Gates: []featuregate.Feature{features.ImagePullJobGate}, Build: func(Deps) (Controller, error) {
			built.Add(1)
			return newFake("off"), nil
		}},
		{Name: "on", Gates: []featuregate.Feature{features.KruiseDaemon}, Build: func(Deps) (Controller, error) { return on, nil }},
	}
	o := testOptions()
	o.LeaderElect = false
	o.Features = gateFrom(t, "ImagePullJobGate=false")
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	client := fake.NewClientset()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, o, deps{client: client, leases: client.CoordinationV1(), identity: "test", builders: entries})
	}()
	require.Eventually(t, func() bool { return on.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Zero(t, built.Load())
}
