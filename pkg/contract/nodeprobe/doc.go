// Package nodeprobe is what kruise-controller, its webhooks and kruise-daemon agree on about node
// probes: how a probe is named in a NodePodProbe (a PodProbeMarker's probe, or a container's
// enhanced liveness probe), the liveness probes a pod's annotation carries, who asked for a
// PodProbeMarker (recorded by its mutating webhook, judged with SubjectAccessReviews before an
// exec probe reaches a pod), and how long a result's message may be.
package nodeprobe
