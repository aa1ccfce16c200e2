//go:build bench

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// rolloutImages returns n images that each run as busybox does but have a digest of their own
// (framework.BusyboxVariant: the loopback registry's busybox plus one small layer), pulled on the
// node beforehand, with the base image, so that no measured restart waits for a pull.
//
// Why not two tags, back and forth: the kubelet keys its restart back-off on the pod, the
// container and its spec hash (which includes the image). A container that goes back to an
// image it ran minutes ago finds that key's back-off running and starts about 10 s late; a
// never-seen image never does. So every rollout and every floor sample goes to a new image.
//
// The node's copies of the variants are removed when the test ends.
func (e *env) rolloutImages(ctx context.Context, t *testing.T, n int) []string {
	t.Helper()
	f := framework.New(t)
	start := time.Now()
	if _, err := e.rt.PullImage(ctx, cri.PullRequest{Image: image}); err != nil {
		t.Fatalf("pulling %s: %v", image, err)
	}
	imgs := make([]string, 0, n)
	for range n {
		ref := f.BusyboxVariant(t)
		if _, err := e.rt.PullImage(ctx, cri.PullRequest{Image: ref}); err != nil {
			t.Fatalf("pulling %s: %v", ref, err)
		}
		imgs = append(imgs, ref)
	}
	t.Cleanup(func() {
		for _, ref := range imgs {
			if err := e.rt.RemoveImage(context.Background(), ref); err != nil {
				t.Logf("removing image %s from the node: %v", ref, err)
			}
		}
	})
	t.Logf("%d image variants pushed and pulled in %s", n, time.Since(start).Round(time.Millisecond))
	return imgs
}
