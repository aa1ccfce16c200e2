package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekruise/kruise/pkg/process/features"
)

// TestPreDownloadEnabled: a workload's pre-download runs only with its gate and the ImagePullJob
// controller and daemons that carry the pulls out.
func TestPreDownloadEnabled(t *testing.T) {
	cases := []struct {
		gates  string
		cs, ds bool
	}{
		{gates: "", cs: false, ds: false},
		{gates: "PreDownloadImageForInPlaceUpdate=true", cs: true, ds: false},
		{gates: "PreDownloadImageForDaemonSetUpdate=true", cs: false, ds: true},
		{gates: "PreDownloadImageForDaemonSetUpdate=true,PreDownloadImageForInPlaceUpdate=true,ImagePullJobGate=false", cs: false, ds: false},
		{gates: "PreDownloadImageForDaemonSetUpdate=true,PreDownloadImageForInPlaceUpdate=true,KruiseDaemon=false", cs: false, ds: false},
	}
	for _, tc := range cases {
		t.Run(tc.gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, tc.gates)
			assert.Equal(t, tc.cs, preDownloadEnabled(o.featureGate(), features.PreDownloadImageForInPlaceUpdate), "CloneSet and StatefulSet")
			assert.Equal(t, tc.ds, preDownloadEnabled(o.featureGate(), features.PreDownloadImageForDaemonSetUpdate), "DaemonSet")
		})
	}
}
