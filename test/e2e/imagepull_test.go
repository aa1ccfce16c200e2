//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A tag the registry does not have fails as NotFound at the first attempt: retries left
// (backoffLimit 3) are not spent on an answer that will not change.
func TestImagePullMissingImage(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-missing")
	image := e.f.Image("public/does-not-exist-" + rand.String(8) + ":x")
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()
	const notFound = `kruise_daemon_image_pull_failures_total{reason="not_found"}`
	failures := daemonSample(ctx, t, notFound)

	job := framework.NewImagePullJob(e.ns, "missing", image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](30), BackoffLimit: ptr.To[int32](3)}
	job = e.run(ctx, t, job)
	e.requireFailed(ctx, t, job)
	requireFailedTag(t, w, "NotFound")
	requireFailedTag(t, w, "after 1 attempt: ")
	requireDaemonCounted(ctx, t, notFound, failures, 1)
	if recs := framework.PullRecordsFor(t, image, since); recs != nil && len(recs) != 1 {
		t.Errorf("the runtime was asked %d times to pull %s, want once: %v", len(recs), image, recs)
	}
}

// requireFailedTag checks that the daemon reported the tag Failed on the real node with a message
// mentioning reason.
func requireFailedTag(t *testing.T, w *framework.NodeImageWatch, reason string) {
	t.Helper()
	node := framework.NodeName()
	o, ok := w.Find(node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhaseFailed
	})
	if !ok {
		t.Fatalf("NodeImage %s never reported the tag Failed; observed: %s", node, w.Summary(node))
	}
	if !strings.Contains(o.Status.Message, reason) {
		t.Errorf("NodeImage %s reported Failed with message %q, want it to mention %s; observed: %s", node, o.Status.Message, reason, w.Summary(node))
	}
	if _, ok := w.Find(node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhaseSucceeded
	}); ok {
		t.Errorf("NodeImage %s reported the tag Succeeded; observed: %s", node, w.Summary(node))
	}
}

// With parallelism 1 over three nodes (the real one and two fake ones whose daemon this test plays),
// at most one node is asked to pull at a time, and the job completes once all three succeeded.
func TestImagePullParallelism(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-parallel")
	image := e.freshImage(ctx, t, "public/", nil)
	repo, tag := framework.SplitImage(image)

	suffix := rand.String(5)
	fakes := []string{"e2e-fake-" + suffix + "-a", "e2e-fake-" + suffix + "-b"}
	nodes := append(slices.Clone(fakes), framework.NodeName())
	for _, n := range fakes {
		e.f.FakeNode(ctx, t, e.c, n, map[string]string{"kubernetes.io/hostname": n, "kruise.e2e/fake-node": suffix})
	}
	// The NodeImage controller leaves the fake nodes' NodeImages alone (it only creates them for
	// Ready nodes and never deletes one whose node exists).
	for _, n := range fakes {
		if _, err := e.c.AppsV1beta1().NodeImages().Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Fatalf("NodeImage of fake node %s: %v", n, err)
		}
	}

	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	var uid atomic.Value
	uid.Store(types.UID(""))
	// unfinished lists the nodes carrying the job's tag without a result for its version.
	unfinished := func(latest map[string]*appsv1beta1.NodeImage) []string {
		return framework.UnfinishedFor(latest, nodes, repo, tag, uid.Load().(types.UID))
	}
	w.CheckEachEvent(func(latest map[string]*appsv1beta1.NodeImage) string {
		if u := unfinished(latest); len(u) > 1 {
			return fmt.Sprintf("%d nodes pulling at once with parallelism 1: %v", len(u), u)
		}
		return ""
	})

	job := framework.NewImagePullJob(e.ns, "parallel", image)
	job.Spec.Selector = &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: nodes}},
	}}
	job.Spec.Parallelism = ptr.To(intstr.FromInt32(1))
	created := framework.CreateImagePullJob(ctx, t, e.c, job)
	uid.Store(created.UID)

	handled := map[string]bool{}
	for len(handled) < len(nodes) {
		// The next node the controller hands the slot to.
		var next string
		// (From the watch's history: the real node may pull and finish between two polls.)
		framework.WaitFor(ctx, t, time.Minute, "a node given the job's tag", func(context.Context) (bool, string, error) {
			for _, n := range nodes {
				if handled[n] {
					continue
				}
				if _, ok := w.Find(n, func(o framework.TagObservation) bool {
					return o.Spec != nil && slices.ContainsFunc(o.Spec.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == created.UID })
				}); ok {
					next = n
					return true, n, nil
				}
			}
			return false, fmt.Sprintf("handled %v; %s", framework.SortedKeys(handled), describeNodes(w, nodes)), nil
		})
		handled[next] = true
		if next == framework.NodeName() {
			// The real daemon pulls; the job then completes.
			break
		}
		spec := framework.TagSpecOf(w.Latest(next), repo, tag)
		framework.SetTagStatus(ctx, t, e.c, next, repo, tag, spec.Version, appsv1beta1.ImagePhasePulling)
		// While this node pulls, no other node is asked to.
		framework.Consistently(ctx, t, 2*time.Second, "only "+next+" carries the job's tag unfinished", func(context.Context) (bool, string, error) {
			return len(w.Violations()) == 0, strings.Join(w.Violations(), "; "), nil
		})
		framework.SetTagStatus(ctx, t, e.c, next, repo, tag, spec.Version, appsv1beta1.ImagePhaseSucceeded)
	}
	got := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, job.Name, pullJobTimeout)
	if v := w.Violations(); len(v) > 0 {
		t.Errorf("parallelism 1 not respected: %v; %s", v, describeNodes(w, nodes))
	}
	if len(handled) != len(nodes) {
		t.Errorf("the job was handed to %v, want all of %v", framework.SortedKeys(handled), nodes)
	}
	s := got.Status
	if s.Desired != 3 || s.Succeeded != 3 || s.Failed != 0 || !strings.HasPrefix(s.Message, "Completed") {
		t.Fatalf("want a Completed job with desired=3 succeeded=3; got %s", framework.DescribeImagePullJob(ctx, e.c, got))
	}
}

func describeNodes(w *framework.NodeImageWatch, nodes []string) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, w.Summary(n))
	}
	return strings.Join(parts, " | ")
}

// imagePullPolicy IfNotPresent does not pull an image the node has; Always pulls it again.
func TestImagePullImagePullPolicy(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-policy")
	image := e.freshImage(ctx, t, "public/", nil)

	first := e.run(ctx, t, framework.NewImagePullJob(e.ns, "first", image))
	e.requireSucceeded(ctx, t, first)
	e.requirePresent(ctx, t, image)

	since := time.Now()
	job := framework.NewImagePullJob(e.ns, "if-not-present", image)
	job.Spec.ImagePullPolicy = appsv1beta1.PullIfNotPresent
	job = e.run(ctx, t, job)
	e.requireSucceeded(ctx, t, job)
	if recs := framework.PullRecordsFor(t, image, since); len(recs) > 0 {
		t.Errorf("IfNotPresent job pulled an image the node already had: %v", recs)
	}

	since = time.Now()
	job = framework.NewImagePullJob(e.ns, "always", image)
	job.Spec.ImagePullPolicy = appsv1beta1.PullAlways
	job = e.run(ctx, t, job)
	e.requireSucceeded(ctx, t, job)
	onePullRecord(ctx, t, image, since)
}

// An ImageListPullJob of three images makes one ImagePullJob per image and completes when all
// three succeeded.
func TestImagePullImageListPullJob(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-list")
	var images []string
	for range 3 {
		images = append(images, e.freshImage(ctx, t, "public/", nil))
	}
	tmpl := framework.NewImagePullJob(e.ns, "", "").Spec.ImagePullJobTemplate
	tmpl.Parallelism = ptr.To(intstr.FromInt32(1))
	list := &appsv1beta1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "three"},
		Spec:       appsv1beta1.ImageListPullJobSpec{Images: images, ImagePullJobTemplate: tmpl},
	}
	if _, err := e.c.AppsV1beta1().ImageListPullJobs(e.ns).Create(ctx, list, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ImageListPullJob: %v", err)
	}
	describe := func(ctx context.Context, l *appsv1beta1.ImageListPullJob) string {
		s := l.Status
		out := fmt.Sprintf("list job: desired=%d active=%d completed=%d succeeded=%d failed=%v completionTime=%v",
			s.Desired, s.Active, s.Completed, s.Succeeded, s.FailedImageStatuses, s.CompletionTime)
		jobs, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out + "; listing jobs: " + err.Error()
		}
		for i := range jobs.Items {
			out += "; " + framework.DescribeImagePullJob(ctx, e.c, &jobs.Items[i])
		}
		return out
	}
	var got *appsv1beta1.ImageListPullJob
	framework.WaitFor(ctx, t, 3*time.Minute, "ImageListPullJob finished", func(ctx context.Context) (bool, string, error) {
		l, err := e.c.AppsV1beta1().ImageListPullJobs(e.ns).Get(ctx, list.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = l
		return l.Status.CompletionTime != nil, describe(ctx, l), nil
	})
	if s := got.Status; s.Desired != 3 || s.Completed != 3 || s.Succeeded != 3 || len(s.FailedImageStatuses) != 0 {
		t.Errorf("want desired=completed=succeeded=3 and no failures; got %s", describe(ctx, got))
	}
	jobs, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).List(ctx, metav1.ListOptions{LabelSelector: framework.ImageListPullJobLabel + "=" + list.Name})
	if err != nil {
		t.Fatal(err)
	}
	var jobImages []string
	for i := range jobs.Items {
		j := &jobs.Items[i]
		jobImages = append(jobImages, j.Spec.Image)
		if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != got.UID {
			t.Errorf("ImagePullJob %s is not controlled by the list job: %v", j.Name, j.OwnerReferences)
		}
		if j.Status.Succeeded != 1 || j.Status.CompletionTime == nil {
			t.Errorf("child job not succeeded: %s", framework.DescribeImagePullJob(ctx, e.c, j))
		}
	}
	slices.Sort(jobImages)
	want := slices.Sorted(slices.Values(images))
	if !slices.Equal(jobImages, want) {
		t.Errorf("ImagePullJobs of the list pull %v, want one per image %v", jobImages, want)
	}
	for _, img := range images {
		e.requirePresent(ctx, t, img)
	}
}

// sandboxConfig's labels and annotations (OpenKruise's documented example) reach the CRI
// PullImage request, with the daemon's own annotation added.
func TestImagePullSandboxConfig(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-sandbox")
	image := e.freshImage(ctx, t, "public/", nil)
	since := time.Now()

	job := framework.NewImagePullJob(e.ns, "sandbox", image)
	job.Spec.SandboxConfig = &appsv1beta1.SandboxConfig{
		Labels:      map[string]string{"io.kubernetes.image.app": "foo"},
		Annotations: map[string]string{"io.kubernetes.image.nydus": "true"},
	}
	job = e.run(ctx, t, job)
	e.requireSucceeded(ctx, t, job)
	rec := onePullRecord(ctx, t, image, since)
	wantLabels := map[string]string{"io.kubernetes.image.app": "foo"}
	wantAnnotations := map[string]string{"io.kubernetes.image.nydus": "true", framework.PullingImageByAnnotation: framework.PullingImageByValue}
	if !rec.HasSandboxConfig || !maps.Equal(rec.SandboxLabels, wantLabels) || !maps.Equal(rec.SandboxAnnotations, wantAnnotations) {
		t.Errorf("PullImage sandbox config: labels %v annotations %v (present %t), want labels %v annotations %v",
			rec.SandboxLabels, rec.SandboxAnnotations, rec.HasSandboxConfig, wantLabels, wantAnnotations)
	}
}

// A finished job with ttlSecondsAfterFinished 2 is deleted about 2 s after it completed.
func TestImagePullTTLAfterFinished(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-ttl")
	image := e.freshImage(ctx, t, "public/", nil)

	job := framework.NewImagePullJob(e.ns, "ttl", image)
	job.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	framework.CreateImagePullJob(ctx, t, e.c, job)
	var completed *metav1.Time
	framework.WaitFor(ctx, t, pullJobTimeout, "job ttl completed and then deleted", func(ctx context.Context) (bool, string, error) {
		j, err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Get(ctx, job.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		if j.Status.CompletionTime != nil {
			completed = j.Status.CompletionTime
		}
		return false, framework.DescribeImagePullJob(ctx, e.c, j), nil
	})
	gone := time.Now()
	if completed == nil {
		t.Fatalf("the job disappeared before it was seen completed")
	}
	if d := gone.Sub(completed.Time); d < time.Second {
		t.Errorf("job deleted %s after completion, before its ttl of 2s", d)
	}
	e.requirePresent(ctx, t, image)
}

// Deleting a job whose pull is under way cancels the pull: the tag leaves the NodeImage's spec and
// status, the runtime's pull ends Canceled, and no success is reported.
func TestImagePullDeleteStopsPull(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-delete")
	if !e.f.RegistryHasPrefix(t, "slow/") {
		t.Skipf("the running registry at %s does not serve slow/ (its blobs held until the client goes away); "+
			"test/registry has the mode now: restart the registry (hack/tools/registry) to run this test", e.f.Registry)
	}
	image := e.freshImage(ctx, t, "slow/", nil)
	node := framework.NodeName()
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	since := time.Now()

	job := framework.NewImagePullJob(e.ns, "slow", image)
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](240), BackoffLimit: ptr.To[int32](0)}
	framework.CreateImagePullJob(ctx, t, e.c, job)
	w.WaitObservation(ctx, t, node, time.Minute, "tag Pulling", func(o framework.TagObservation) bool {
		return o.Spec != nil && o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhasePulling && o.Status.Version == o.Spec.Version
	})
	if err := e.c.AppsV1beta1().ImagePullJobs(e.ns).Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the job: %v", err)
	}
	framework.WaitFor(ctx, t, time.Minute, "the tag gone from NodeImage "+node+" spec and status", func(context.Context) (bool, string, error) {
		ni := w.Latest(node)
		if ni == nil {
			return false, "no NodeImage", nil
		}
		repo, tag := framework.SplitImage(image)
		return framework.TagSpecOf(ni, repo, tag) == nil && len(framework.TagStatusesOf(ni, repo, tag)) == 0, w.Summary(node), nil
	})
	rec := framework.WaitPullRecord(ctx, t, image, since, time.Minute, "the PullImage call ended", func(framework.PullRecord) bool { return true })
	if rec.Code != "Canceled" {
		t.Errorf("the pull of the deleted job ended with code %s, want Canceled: %s", rec.Code, rec)
	}
	if _, ok := w.Find(node, func(o framework.TagObservation) bool {
		return o.Status != nil && o.Status.Phase == appsv1beta1.ImagePhaseSucceeded
	}); ok {
		t.Errorf("Succeeded reported for the deleted job's pull: %s", w.Summary(node))
	}
	if _, present, _ := e.rt.ImageStatus(ctx, image); present {
		t.Errorf("image %s is on the node although its pull was cancelled", image)
	}
}

// OpenKruise's documented v1alpha1 ImagePullJob (the docs' job-with-always, with this cluster's
// node and an image of the loopback registry) applied as it is works.
func TestImagePullV1alpha1DocsExample(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-v1alpha1")
	image := e.freshImage(ctx, t, "public/", nil)
	manifest := fmt.Sprintf(`apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata:
  name: job-with-always
spec:
  image: %s
  parallelism: 10
  selector:
    names:
    - %s
  completionPolicy:
    type: Always
    activeDeadlineSeconds: 1200
    ttlSecondsAfterFinished: 300
  pullPolicy:
    backoffLimit: 3
    timeoutSeconds: 300
`, image, framework.NodeName())
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.f.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "imagepulljobs"}
	if _, err := dyn.Resource(gvr).Namespace(e.ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("applying the v1alpha1 manifest:\n%s\n%v", manifest, err)
	}
	job := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, "job-with-always", pullJobTimeout)
	e.requireSucceeded(ctx, t, job)
	e.requirePresent(ctx, t, image)

	// The v1alpha1 view of the finished job reads back as written, with its status.
	got, err := e.c.AppsV1alpha1().ImagePullJobs(e.ns).Get(ctx, "job-with-always", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Image != image || got.Status.Succeeded != 1 || got.Status.CompletionTime == nil {
		t.Errorf("v1alpha1 view: image %s succeeded %d completionTime %v", got.Spec.Image, got.Status.Succeeded, got.Status.CompletionTime)
	}
}
