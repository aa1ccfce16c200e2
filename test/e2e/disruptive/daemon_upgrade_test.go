//go:build e2e

package disruptive

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// hardDaemonSet is kruise-daemon's DaemonSet as deploy/ names it.
const hardDaemonSet = "kruise-daemon"

// kruise-daemon is rolled to a new image (a DaemonSet rolling update, as an upgrade does) in the
// middle of a CRR of two containers: the old daemon has stopped the first and runs the second's
// preStop hook when it is told to stop. The new daemon finishes the CRR: each container stopped
// exactly once, and the CRR completes with both Succeeded.
func TestDaemonRollingUpgradeMidCRR(t *testing.T) {
	ctx := framework.Context(t, 14*time.Minute)
	e := faultNewEnv(ctx, t, "hard-upgrade")
	e.faultDaemonReadyAround(ctx, t)
	before := e.f.CreateRunningPod(ctx, t, resPreStopPod(e.f, e.ns, "web", crrKillPreStopSeconds, "first", "second"))

	ds, err := e.f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Get(ctx, hardDaemonSet, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading DaemonSet %s: %v", hardDaemonSet, err)
	}
	oldImage := hardDaemonImage(t, ds)
	newImage := hardDerivedImage(ctx, t, oldImage)
	t.Logf("daemon image %s; upgrading to %s", oldImage, newImage)
	t.Cleanup(func() {
		// Back to the image deploy/ installed, whatever happened.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		hardSetDaemonImage(cctx, t, e.f, oldImage)
		hardWaitRolledOut(cctx, t, e.f, oldImage)
	})

	at := resStartSecondInHook(ctx, t, e)
	t.Logf("CRR before the upgrade: %s", resDescribeCRR(at))
	upgradedAt := time.Now()
	hardSetDaemonImage(ctx, t, e.f, newImage)
	hardWaitRolledOut(ctx, t, e.f, newImage)
	t.Logf("daemon rolled out to the new image %s after the patch", time.Since(upgradedAt).Round(time.Millisecond))

	done := resWaitCRRCompleted(ctx, t, e.c, e.ns, "r", "first", "second")
	t.Logf("CRR completed %s after the upgrade began: %s", time.Since(upgradedAt).Round(time.Millisecond), resDescribeCRR(done))
	resRequireRecreatedOnce(ctx, t, e.f, before, "first", "second")
}

// hardDaemonImage is the image of the daemon container of ds.
func hardDaemonImage(t *testing.T, ds *appsv1.DaemonSet) string {
	t.Helper()
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == faultDaemonContainer {
			return c.Image
		}
	}
	t.Fatalf("DaemonSet %s has no container %s", ds.Name, faultDaemonContainer)
	return ""
}

// hardDerivedImage pushes, next to image, an image with the same layers and an extra config
// label, and returns it by digest: a new image of the same daemon, as an upgrade brings.
func hardDerivedImage(ctx context.Context, t *testing.T, image string) string {
	t.Helper()
	ref, err := name.ParseReference(image, name.Insecure)
	if err != nil {
		t.Fatalf("parsing %s: %v", image, err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading %s from the registry: %v", image, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("reading the config of %s: %v", image, err)
	}
	c := cfg.Config.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels["kruise.e2e/upgrade"] = rand.String(8)
	derived, err := mutate.Config(img, *c)
	if err != nil {
		t.Fatalf("deriving an image: %v", err)
	}
	tag := ref.Context().Tag("e2e-upgrade")
	if err := remote.Write(tag, derived, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing %s: %v", tag, err)
	}
	d, err := derived.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String()).String()
}

// hardSetDaemonImage points the daemon container of the DaemonSet at image.
func hardSetDaemonImage(ctx context.Context, t *testing.T, f *framework.Framework, image string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []map[string]any{{"name": faultDaemonContainer, "image": image}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Patch(ctx, hardDaemonSet, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("setting the daemon image to %s: %v", image, err)
	}
}

// hardWaitRolledOut waits until every daemon pod runs image and is ready.
func hardWaitRolledOut(ctx context.Context, t *testing.T, f *framework.Framework, image string) {
	t.Helper()
	faultWaitDaemonRolledOut(ctx, t, f, image, func(c *corev1.Container) bool { return strings.HasSuffix(c.Image, hardDigestOf(image)) })
}

// hardDigestOf is the "@sha256:..." part of an image by digest, or the image itself.
func hardDigestOf(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i:]
	}
	return image
}
