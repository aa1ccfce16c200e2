// Package predownload is image pre-download for in-place updates, shared by the CloneSet,
// Advanced DaemonSet and Advanced StatefulSet controllers: while a workload updates its pods in
// place in more than one batch, an ImagePullJob per changed image pulls the new image on the
// nodes of the pods still to be updated (the ImagePullJob controller fans it out to their
// NodeImages, which kruise-daemon pulls), so that by their turn the update is a restart rather
// than a pull.
//
// Each workload decides whether its move is worth it (its own batches and policy) and hands
// the rest here: which images changed, the settings, the jobs, and the acts on the API server
// (create the jobs, label the update revision so the question is asked once, delete the jobs
// that no longer serve the update).
package predownload

// The reference's numbers.
const (
	// MinReplicas: a CloneSet or StatefulSet of this many replicas or fewer is not worth it.
	MinReplicas = 3
	// DefaultTimeoutSeconds bounds each pull unless the workload says otherwise.
	DefaultTimeoutSeconds int32 = 300
	// BackoffLimit: one retry per node; the update pulls anyway if it fails.
	BackoffLimit int32 = 1
	// TTLSeconds: a finished job is deleted this long after.
	TTLSeconds int32 = 600
	// MaxJobNameLength is the longest name an ImagePullJob (a DNS subdomain) may have.
	MaxJobNameLength = 253
)

// Event reasons of pre-download (the reference's for the jobs).
const (
	ReasonCreatedImagePullJob      = "CreatedImagePullJob"
	ReasonFailedCreateImagePullJob = "FailedCreateImagePullJob"
	ReasonPreDownloadFailed        = "PreDownloadFailed"
)
