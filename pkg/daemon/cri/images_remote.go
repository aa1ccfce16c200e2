package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The metadata of the PodSandboxConfig every PullImage request carries.
// There is no real sandbox behind it: runtimes and their plugins only read
// it (labels and annotations chiefly), so it is the same for every pull and
// names the daemon as the puller.
const (
	PullSandboxName      = "kruise-image-pull"
	PullSandboxNamespace = "kruise-daemon"
	PullSandboxUID       = "8e3f1b2a-6c4d-4e5f-9a0b-6b7275697365"
)

// ErrEmptyImage is returned for an empty image reference, before any call.
var ErrEmptyImage = errors.New("empty image reference")

var _ ImageService = (*remoteRuntime)(nil)

// PullImage implements ImageService. Errors keep the runtime's gRPC status
// (see DescribePullError) and never include req.Auth. It has no call
// timeout: a pull may take long, and runs under the caller's deadline.
func (r *remoteRuntime) PullImage(ctx context.Context, req PullRequest) (string, error) {
	if req.Image == "" {
		return "", fmt.Errorf("CRI PullImage: %w", ErrEmptyImage)
	}
	resp, err := r.images.PullImage(ctx, pullRequestToCRI(req))
	if err != nil {
		return "", fmt.Errorf("CRI PullImage %s: %w", req.Image, err)
	}
	return resp.GetImageRef(), nil
}

// pullRequestToCRI builds the wire request: the sandbox config is never nil.
func pullRequestToCRI(req PullRequest) *runtimeapi.PullImageRequest {
	return &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: req.Image},
		Auth:  authToCRI(req.Auth),
		SandboxConfig: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{
				Name:      PullSandboxName,
				Namespace: PullSandboxNamespace,
				Uid:       PullSandboxUID,
			},
			Labels:      req.SandboxLabels,
			Annotations: req.SandboxAnnotations,
		},
	}
}

func authToCRI(a *Auth) *runtimeapi.AuthConfig {
	if a == nil {
		return nil
	}
	return &runtimeapi.AuthConfig{
		Username:      a.Username,
		Password:      a.Password,
		Auth:          a.Auth,
		ServerAddress: a.ServerAddress,
		IdentityToken: a.IdentityToken,
		RegistryToken: a.RegistryToken,
	}
}

// ImageStatus implements ImageService. An image the runtime does not have
// (no image in the answer, or NotFound) is (ImageInfo{}, false, nil).
func (r *remoteRuntime) ImageStatus(ctx context.Context, image string) (ImageInfo, bool, error) {
	if image == "" {
		return ImageInfo{}, false, fmt.Errorf("CRI ImageStatus: %w", ErrEmptyImage)
	}
	callCtx, cancel := r.bounded(ctx)
	defer cancel()
	resp, err := r.images.ImageStatus(callCtx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if status.Code(err) == codes.NotFound {
		return ImageInfo{}, false, nil
	}
	if err != nil {
		return ImageInfo{}, false, fmt.Errorf("CRI ImageStatus %s: %w", image, noAnswer(ctx, callCtx, err, r.callTimeout))
	}
	img := resp.GetImage()
	if img == nil {
		return ImageInfo{}, false, nil
	}
	return ImageInfo{
		ID:          img.GetId(),
		RepoTags:    slices.Clone(img.GetRepoTags()),
		RepoDigests: slices.Clone(img.GetRepoDigests()),
		Size:        img.GetSize(),
	}, true, nil
}

// RemoveImage implements ImageService. NotFound counts as removed; it still
// shows in the errors metric (code NotFound), as for StopContainer.
func (r *remoteRuntime) RemoveImage(ctx context.Context, image string) error {
	if image == "" {
		return fmt.Errorf("CRI RemoveImage: %w", ErrEmptyImage)
	}
	callCtx, cancel := r.bounded(ctx)
	defer cancel()
	_, err := r.images.RemoveImage(callCtx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("CRI RemoveImage %s: %w", image, noAnswer(ctx, callCtx, err, r.callTimeout))
	}
	return nil
}
