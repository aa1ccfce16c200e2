package controller

import "testing"

// The lease is released only when the controllers stopped with it held; a
// lost lease with controllers still running must end the process.
func TestEndingOf(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		stoppedInTime, lost, shuttingDown bool
		want                              ending
	}{
		{"stopped on shutdown", true, false, true, endRelease},
		{"controllers failed", true, false, false, endRelease},
		{"lost", true, true, false, endLost},
		{"lost while shutting down", true, true, true, endLostOnShutdown},
		{"stuck on shutdown", false, false, true, endUnreleased},
		{"stuck after a failure", false, false, false, endUnreleased},
		{"lost and stuck", false, true, false, endStuck},
		{"lost and stuck while shutting down", false, true, true, endStuck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endingOf(tc.stoppedInTime, tc.lost, tc.shuttingDown); got != tc.want {
				t.Errorf("endingOf(%v, %v, %v) = %v, want %v", tc.stoppedInTime, tc.lost, tc.shuttingDown, got, tc.want)
			}
		})
	}
}
