package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// TestResizeSupportFollowsItsGate: with InPlaceWorkloadVerticalScaling on (the default) the
// workloads resize as the API server allows (Deps.Resize); off, never, with the gate named.
func TestResizeSupportFollowsItsGate(t *testing.T) {
	ctx := context.Background()
	served := inplace.ResizeOff("served answer")
	for gates, want := range map[string]string{
		"":                                     "served answer",
		"InPlaceWorkloadVerticalScaling=true":  "served answer",
		"InPlaceWorkloadVerticalScaling=false": resizeGateOff,
	} {
		t.Run(gates, func(t *testing.T) {
			o := testOptions()
			o.Features = gateFrom(t, gates)
			d := Deps{Options: o, Resize: served}
			assert.Equal(t, want, d.resizeSupport().NoResize(ctx))
		})
	}
	o := testOptions()
	o.Features = gateFrom(t, "")
	assert.Nil(t, Deps{Options: o}.resizeSupport(), "gate on and no discovery: resize (nil answers that pods resize)")
}
