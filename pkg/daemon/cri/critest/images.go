package critest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Image is one image in the fake's store. References match exactly (no
// docker.io/library normalisation): by ID, by any RepoTags or RepoDigests.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        uint64
}

func (i *Image) matches(ref string) bool {
	return ref == i.ID || slices.Contains(i.RepoTags, ref) || slices.Contains(i.RepoDigests, ref)
}

func (i *Image) toCRI() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id:          i.ID,
		RepoTags:    slices.Clone(i.RepoTags),
		RepoDigests: slices.Clone(i.RepoDigests),
		Size:        i.Size,
		Spec:        &runtimeapi.ImageSpec{Image: i.ID},
	}
}

// PullCall records one PullImage request as it arrived, credentials and
// sandbox config included (deep copies: tests may keep them).
type PullCall struct {
	Image         string
	Auth          *runtimeapi.AuthConfig
	SandboxConfig *runtimeapi.PodSandboxConfig
	// Deadline is how long the caller's gRPC deadline left when the call
	// arrived; zero when it had none.
	Deadline time.Duration
}

// PullScript says how PullImage answers for one image reference.
type PullScript struct {
	// Delay waits this long before answering (cut short, with the caller's
	// context error, if the caller gives up).
	Delay time.Duration
	// Hang blocks the pull until the caller gives up; it is then answered
	// with Canceled or DeadlineExceeded.
	Hang bool
	// Release, when not nil, blocks the pull until it is closed (then the
	// pull goes on as scripted) or the caller gives up.
	Release <-chan struct{}
	// Err, when set, is returned instead of pulling.
	Err error
	// ID and Size describe the pulled image; an empty ID is derived from
	// the reference ("sha256:" + sha256 of it) and a zero Size is 1 MiB.
	ID   string
	Size uint64
}

// FakeImages is an in-memory CRI ImageService: PullImage adds to the store
// (or fails as scripted), ImageStatus, ListImages and RemoveImage read and
// change it. RemoveImage of an absent image answers NotFound, as some
// runtimes do. Its zero value is ready to use.
type FakeImages struct {
	runtimeapi.UnimplementedImageServiceServer

	mu       sync.Mutex
	images   []*Image
	pulls    []PullCall
	scripts  map[string]PullScript
	callErrs map[string]error
	onCall   func(method, image string)
	held     map[string]chan struct{}
}

// HangCall makes every call of an image method ("PullImage",
// "ImageStatus", "ListImages", "RemoveImage") block without an answer until
// the caller gives up (hang true), or lets them go on (hang false).
func (f *FakeImages) HangCall(method string, hang bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = holdCall(f.held, method, hang)
}

// NewFakeImages returns an empty image store.
func NewFakeImages() *FakeImages { return &FakeImages{} }

// AddImage puts img in the store, replacing an image with the same ID.
func (f *FakeImages) AddImage(img Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img.RepoTags = slices.Clone(img.RepoTags)
	img.RepoDigests = slices.Clone(img.RepoDigests)
	f.images = slices.DeleteFunc(f.images, func(i *Image) bool { return i.ID == img.ID })
	f.images = append(f.images, &img)
}

// GetImage returns a copy of the image ref names, if present.
func (f *FakeImages) GetImage(ref string) (Image, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := f.find(ref); i != nil {
		c := *i
		c.RepoTags, c.RepoDigests = slices.Clone(i.RepoTags), slices.Clone(i.RepoDigests)
		return c, true
	}
	return Image{}, false
}

// Images returns copies of every stored image, in insertion order.
func (f *FakeImages) Images() []Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Image, 0, len(f.images))
	for _, i := range f.images {
		c := *i
		c.RepoTags, c.RepoDigests = slices.Clone(i.RepoTags), slices.Clone(i.RepoDigests)
		out = append(out, c)
	}
	return out
}

// SetPullScript sets how PullImage answers for the reference image.
func (f *FakeImages) SetPullScript(image string, s PullScript) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.scripts == nil {
		f.scripts = map[string]PullScript{}
	}
	f.scripts[image] = s
}

// SetCallError makes every call of an image method ("PullImage",
// "ImageStatus", "ListImages", "RemoveImage") fail with err; nil clears it.
// It applies before any PullScript, after the call is recorded.
func (f *FakeImages) SetCallError(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.callErrs == nil {
		f.callErrs = map[string]error{}
	}
	f.callErrs[method] = err
}

// OnCall sets a function called (outside the fake's lock) when an image
// call arrives, after PullImage has recorded it and before it is answered:
// tests use it to learn that a call is in flight without sleeping.
func (f *FakeImages) OnCall(fn func(method, image string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onCall = fn
}

// PullCalls returns the PullImage requests so far.
func (f *FakeImages) PullCalls() []PullCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pulls)
}

// find returns the stored image ref names; the caller holds f.mu.
func (f *FakeImages) find(ref string) *Image {
	for _, i := range f.images {
		if i.matches(ref) {
			return i
		}
	}
	return nil
}

func (f *FakeImages) begin(ctx context.Context, method, image string) error {
	f.mu.Lock()
	fn, err, hold := f.onCall, f.callErrs[method], f.held[method]
	f.mu.Unlock()
	if fn != nil {
		fn(method, image)
	}
	if herr := waitHeld(ctx, hold); herr != nil {
		return herr
	}
	return err
}

// PullImage implements runtimeapi.ImageServiceServer.
func (f *FakeImages) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	call := PullCall{Image: ref, Deadline: remaining(ctx)}
	if req.GetAuth() != nil {
		call.Auth = proto.Clone(req.GetAuth()).(*runtimeapi.AuthConfig)
	}
	if req.GetSandboxConfig() != nil {
		call.SandboxConfig = proto.Clone(req.GetSandboxConfig()).(*runtimeapi.PodSandboxConfig)
	}
	f.mu.Lock()
	f.pulls = append(f.pulls, call)
	script := f.scripts[ref]
	f.mu.Unlock()

	if err := f.begin(ctx, "PullImage", ref); err != nil {
		return nil, err
	}
	if ref == "" {
		return nil, status.Error(codes.InvalidArgument, "image reference is empty")
	}
	if err := waitScript(ctx, script); err != nil {
		return nil, err
	}
	if script.Err != nil {
		return nil, script.Err
	}

	id := script.ID
	if id == "" {
		sum := sha256.Sum256([]byte(ref))
		id = "sha256:" + hex.EncodeToString(sum[:])
	}
	size := script.Size
	if size == 0 {
		size = 1 << 20
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	img := f.findID(id)
	if img == nil {
		img = &Image{ID: id, Size: size}
		f.images = append(f.images, img)
	}
	if strings.Contains(ref, "@") {
		if !slices.Contains(img.RepoDigests, ref) {
			img.RepoDigests = append(img.RepoDigests, ref)
		}
	} else if !slices.Contains(img.RepoTags, ref) {
		img.RepoTags = append(img.RepoTags, ref)
	}
	return &runtimeapi.PullImageResponse{ImageRef: id}, nil
}

func (f *FakeImages) findID(id string) *Image {
	for _, i := range f.images {
		if i.ID == id {
			return i
		}
	}
	return nil
}

// waitScript waits out the script's Hang, Release and Delay, in that order.
func waitScript(ctx context.Context, s PullScript) error {
	gone := func() error { return status.FromContextError(ctx.Err()).Err() }
	if s.Hang {
		<-ctx.Done()
		return gone()
	}
	if s.Release != nil {
		select {
		case <-s.Release:
		case <-ctx.Done():
			return gone()
		}
	}
	if s.Delay > 0 {
		timer := time.NewTimer(s.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return gone()
		}
	}
	return nil
}

// ImageStatus implements runtimeapi.ImageServiceServer. An absent image is
// a response without an image, as the CRI asks.
func (f *FakeImages) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := req.GetImage().GetImage()
	if err := f.begin(ctx, "ImageStatus", ref); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ImageStatusResponse{}
	if i := f.find(ref); i != nil {
		resp.Image = i.toCRI()
	}
	return resp, nil
}

// ListImages implements runtimeapi.ImageServiceServer; a filter image
// matches like ImageStatus.
func (f *FakeImages) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	ref := req.GetFilter().GetImage().GetImage()
	if err := f.begin(ctx, "ListImages", ref); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	for _, i := range f.images {
		if ref == "" || i.matches(ref) {
			resp.Images = append(resp.Images, i.toCRI())
		}
	}
	return resp, nil
}

// RemoveImage implements runtimeapi.ImageServiceServer. It removes the
// whole image ref names (every tag), and answers NotFound when absent.
func (f *FakeImages) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if err := f.begin(ctx, "RemoveImage", ref); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.images)
	f.images = slices.DeleteFunc(f.images, func(i *Image) bool { return i.matches(ref) })
	if len(f.images) == n {
		return nil, status.Errorf(codes.NotFound, "image %q: not found", ref)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo implements runtimeapi.ImageServiceServer with one filesystem
// whose used bytes are the sum of the stored image sizes.
func (f *FakeImages) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var used uint64
	for _, i := range f.images {
		used += i.Size
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/fake/images"},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(f.images))},
	}}}, nil
}
