package controller

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/controller/enhancedliveness"
	"github.com/nodekruise/kruise/pkg/webhook/livenessinjection"
)

// The enhanced liveness webhook and controller run only with EnhancedLivenessProbe and
// KruiseDaemon (nothing would run the probes without a daemon), as in OpenKruise.
func TestEnhancedLivenessFollowsItsGates(t *testing.T) {
	t.Setenv(PodNamespaceEnv, "kruise-system")
	for _, tc := range []struct {
		gates string
		on    bool
	}{
		{gates: ""},
		{gates: "EnhancedLivenessProbe=true", on: true},
		{gates: "AllAlpha=true", on: true},
		{gates: "EnhancedLivenessProbe=true,KruiseDaemon=false"},
	} {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.WebhookEnabled = true
			o.WebhookAddr = "127.0.0.1:0"
			o.Features = gateFrom(t, tc.gates)
			assert.Equal(t, tc.on, o.enhancedLiveness())
			d := deps{client: fake.NewClientset(), kruiseClient: kruisefake.NewSimpleClientset(),
				webhookClient: fake.NewClientset(), webhookKruiseClient: kruisefake.NewSimpleClientset()}
			w, err := newWebhooks(o, d, "kruise-system", prometheus.NewRegistry())
			require.NoError(t, err)
			assert.Equal(t, tc.on, slices.Contains(w.paths, livenessinjection.Path))

			enabled, _ := SelectEnabled(o.featureGate(), builders)
			var names []string
			for _, e := range enabled {
				names = append(names, e.Name)
			}
			assert.Equal(t, tc.on, slices.Contains(names, enhancedliveness.Name))
		})
	}
}
