package cri

import "context"

// ImageService is the image half of CRI, as the daemon's pre-pulls need it.
// Its types carry no Kubernetes API objects.
type ImageService interface {
	// PullImage pulls req.Image and returns the image reference the runtime
	// reports (an image ID such as "sha256:..."). It runs until ctx ends:
	// CRI gives a pull no deadline of its own.
	PullImage(ctx context.Context, req PullRequest) (string, error)
	// ImageStatus reports whether the image is present and, if so, what
	// the runtime knows of it.
	ImageStatus(ctx context.Context, image string) (ImageInfo, bool, error)
	// RemoveImage removes the image; one that is not present is not an error.
	RemoveImage(ctx context.Context, image string) error
}

// PullRequest is one CRI PullImage call.
type PullRequest struct {
	// Image is the reference to pull, e.g. "docker.io/library/busybox:1.36".
	Image string
	// Auth, when not nil, is sent as the request's AuthConfig; nil pulls
	// anonymously.
	Auth *Auth
	// SandboxLabels and SandboxAnnotations become the labels and
	// annotations of the request's PodSandboxConfig, which is never nil:
	// runtimes and their plugins may read it to pick a mirror, a snapshotter
	// or a policy.
	SandboxLabels      map[string]string
	SandboxAnnotations map[string]string
}

// Auth is CRI's AuthConfig. It holds secrets: never log it.
type Auth struct {
	Username      string
	Password      string
	Auth          string
	ServerAddress string
	IdentityToken string
	RegistryToken string
}

// ImageInfo is what the runtime reports of a present image.
type ImageInfo struct {
	// ID is the image ID, e.g. "sha256:...".
	ID          string
	RepoTags    []string
	RepoDigests []string
	// Size is the image's size in bytes as the runtime counts it.
	Size uint64
}
