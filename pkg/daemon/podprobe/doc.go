// Package podprobe is kruise-daemon's node prober: it runs the probes its
// node's NodePodProbe lists (PodProbeMarker probes and enhanced liveness
// probes) and reports their results in that NodePodProbe's status.
//
// One worker runs per (pod UID, probe name) of the spec, with the kubelet's
// timing (initial delay from the container's start, period, timeout,
// success and failure thresholds, a random first wait). exec probes go
// through CRI ExecSync into the container the pod's status names; TCP and
// HTTP probes go only to the pod's own IP, past the address guard
// (guard.go). The status is written only when a probe's state or message
// changes, coalesced into one write per short delay.
package podprobe
