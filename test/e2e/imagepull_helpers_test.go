//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// pullJobTimeout bounds an ImagePullJob of one tiny image on the local node from creation to
// completion.
const pullJobTimeout = 2 * time.Minute

// pullEnv is what every image pull test uses.
type pullEnv struct {
	f  *framework.Framework
	c  versioned.Interface
	rt cri.Runtime
	ns string
}

func newPullEnv(t *testing.T, ctx context.Context, prefix string) *pullEnv {
	t.Helper()
	f := framework.New(t)
	return &pullEnv{f: f, c: f.KruiseClient(t), rt: framework.CRI(ctx, t), ns: f.NewNamespace(ctx, t, prefix)}
}

// freshImage pushes a new unique image under prefix and makes sure the node does not have it.
func (e *pullEnv) freshImage(ctx context.Context, t *testing.T, prefix string, creds *framework.Credentials) string {
	t.Helper()
	image := e.f.UniqueImage(prefix)
	framework.PushImage(t, image, creds)
	if err := e.rt.RemoveImage(ctx, image); err != nil {
		t.Fatalf("removing %s from the node: %v", image, err)
	}
	return image
}

// run creates the job and waits until it finishes.
func (e *pullEnv) run(ctx context.Context, t *testing.T, job *appsv1beta1.ImagePullJob) *appsv1beta1.ImagePullJob {
	t.Helper()
	framework.CreateImagePullJob(ctx, t, e.c, job)
	return framework.WaitImagePullJobFinished(ctx, t, e.c, job.Namespace, job.Name, pullJobTimeout)
}

// requireSucceeded checks a finished job succeeded on exactly the real node.
func (e *pullEnv) requireSucceeded(ctx context.Context, t *testing.T, job *appsv1beta1.ImagePullJob) {
	t.Helper()
	s := job.Status
	if s.Desired != 1 || s.Succeeded != 1 || s.Failed != 0 || s.Active != 0 || len(s.FailedNodes) != 0 ||
		!strings.HasPrefix(s.Message, "Completed") {
		t.Fatalf("want a Completed job with desired=1 succeeded=1 failed=0; got %s", framework.DescribeImagePullJob(ctx, e.c, job))
	}
}

// requireFailed checks a finished job failed on the real node.
func (e *pullEnv) requireFailed(ctx context.Context, t *testing.T, job *appsv1beta1.ImagePullJob) {
	t.Helper()
	s := job.Status
	if s.Desired != 1 || s.Succeeded != 0 || s.Failed != 1 || !slices.Equal(s.FailedNodes, []string{framework.NodeName()}) {
		t.Fatalf("want a finished job with failed=1 failedNodes=[%s]; got %s", framework.NodeName(), framework.DescribeImagePullJob(ctx, e.c, job))
	}
}

// requirePresent checks that the node's runtime has image.
func (e *pullEnv) requirePresent(ctx context.Context, t *testing.T, image string) {
	t.Helper()
	info, present, err := e.rt.ImageStatus(ctx, image)
	if err != nil || !present {
		t.Fatalf("image %s is not on the node after the job succeeded (present=%t, err=%v)", image, present, err)
	}
	t.Logf("image %s present on the node as %s", image, info.ID)
}

// onePullRecord waits for the CRI proxy's record of the successful pull of image since.
func onePullRecord(ctx context.Context, t *testing.T, image string, since time.Time) framework.PullRecord {
	t.Helper()
	return framework.WaitPullRecord(ctx, t, image, since, 30*time.Second, "code OK", func(r framework.PullRecord) bool {
		return r.Code == "OK"
	})
}
