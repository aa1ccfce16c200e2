// Package validate holds the validating admission webhooks of kruise's own
// kinds: they refuse what can be known to be wrong then and that the CRD
// schema cannot express.
//
//   - ContainerRecreateRequest, at CREATE: its pod does not exist, is being
//     deleted or has finished, or lacks a container the request names (the
//     pod is read from the API server, not a cache: it may have been created
//     a moment before the request).
//   - ImagePullJob, ImageListPullJob, at CREATE: an image reference does not
//     parse.
//   - The workloads, at CREATE and UPDATE (workload.go: one admission for
//     all, a v1alpha1 object judged as v1beta1): the selector, the
//     schemaless pod template and claim templates (podtemplate.go), and
//     per kind: a CloneSet's podsToDelete, a StatefulSet's reserveOrdinals
//     and in-place readiness gate, a DaemonSet's rolling update; what an
//     update may change, and InPlaceOnly templates. Nothing is read from
//     the API server. kruise-controller does not act on a CloneSet admitted
//     without the webhook whose selector does not match its template or
//     whose pods would not run until deleted, and says so in an Event.
//   - SidecarSet, at CREATE and UPDATE (sidecarset*.go, through the same
//     admission): its containers and volumes as a pod would take them once
//     injected, its strategies and patchPodMetadata, and, read from the API
//     server at each request, its conflicts with every other SidecarSet
//     that may select the same pods (pkg/workload/sidecarrules), its canary's base and
//     the revision injectionStrategy.revision names.
//   - PodUnavailableBudget (policy.kruise.io), at CREATE and UPDATE
//     (podunavailablebudget*.go): its annotations, selector or targetRef,
//     maxUnavailable or minAvailable, what an update may change, and, read
//     at each request, another budget of the namespace covering the same
//     pods (OpenKruise's test). Refused when both PodUnavailableBudget gates
//     are off. A budget admitted is routed to the pod disruption webhooks
//     first (BudgetScope).
//
// Each refusal uses the words kruise-controller puts in status when it finds
// the same at admission, so a request sent where the webhook is not called
// (failurePolicy Ignore during an outage, an install without webhooks, or
// kruise-controller's own requests, which the configuration does not send)
// gets the same answer in its status instead. What changes after the object
// was admitted (a pod deleted later) is only ever answered in status.
//
// A webhook never refuses on its own failure: when it cannot decide (the
// pod cannot be read, the object does not decode) it admits the object with
// a warning, and the status path answers. One exception: a new workload
// that does not decode is refused, since only its schemaless template can
// be at fault, and stored it would break every client listing its kind.
package validate
