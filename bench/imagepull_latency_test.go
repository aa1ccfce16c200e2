//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// Settings of the image pre-pull benchmark, overridable from the environment.
var (
	// pullIterations is this benchmark's own default of BENCH_ITERATIONS: a large pull takes
	// seconds, so 10 per arm and size rather than the 20 of the other benchmarks.
	pullIterations = envInt("BENCH_ITERATIONS", 10)
	pullNode       = envStr("BENCH_NODE", "vm")
	pullRegistry   = envStr("BENCH_REGISTRY", "127.0.0.1:5000")
)

// pullTimeout bounds one pull, either arm (a large pull takes seconds), and each wait for the
// NodeImage to forget a withdrawn tag.
const pullTimeout = 5 * time.Minute

// The daemon that pulls for ImagePullJobs; its log holds its own timing of each pull.
const daemonLabel = "app.kubernetes.io/name=kruise-daemon"

// benchImage is one of the two images pushed at the start.
type benchImage struct {
	size   string // "small" or "large"
	layers int64
	layerB int64 // bytes per layer
	repo   string
	tag    string
}

func (i benchImage) ref() string { return i.repo + ":" + i.tag }

type pullArm string

const (
	armJob    pullArm = "ImagePullJob"
	armDirect pullArm = "CRI PullImage"
)

// pullSample is one timed pull. Every duration is from the trigger: the client clock just before
// Create of the ImagePullJob, or just before the PullImage call.
type pullSample struct {
	// total: the job's watch event with succeeded=1 (a), PullImage returned (b). The metric.
	total time.Duration

	// ImagePullJob arm only, all zero in the other.
	// specSeen: a NodeImage watch event shows the tag in spec, owned by this job.
	specSeen time.Duration
	// daemonStart, daemonEnd: the daemon's "Pulling image" and "Pulled image" log lines (the
	// container log's timestamps, same host clock as the trigger).
	daemonStart, daemonEnd time.Duration
	// daemonPull: the duration the daemon itself logged for its PullImage call.
	daemonPull time.Duration
	// pullingSeen: a NodeImage watch event shows the tag's status Pulling for this version (the
	// daemon's first status write of the pull); zero if the first status seen was already final.
	pullingSeen time.Duration
	// statusSeen: a NodeImage watch event shows the tag's status Succeeded for this version.
	statusSeen time.Duration
	// tagStart, tagEnd: the tag's startTime and completionTime in the NodeImage status; whole
	// seconds (metav1.Time), so only printed per iteration.
	tagStart, tagEnd time.Time
	// attempts: the daemon's attempt number of the pull that succeeded (1 = no retry).
	attempts int
}

// TestImagePullLatency measures, per image size, an ImagePullJob on the one node (create →
// job status succeeded=1) against the floor: a CRI PullImage of the same reference sent straight
// to containerd. Before every pull the image is removed from containerd, so both arms download
// and unpack it.
func TestImagePullLatency(t *testing.T) {
	ctx := context.Background()
	b := connect(ctx, t, "bench-imagepull", "bench-imagepull")

	runID := strings.ToLower(utilrand.String(6))
	images := []benchImage{
		{size: "small", layers: 1, layerB: 2 << 20, repo: pullRegistry + "/public/bench-small", tag: runID},
		{size: "large", layers: 4, layerB: 25 << 20, repo: pullRegistry + "/public/bench-large", tag: runID},
	}
	for _, img := range images {
		start := time.Now()
		if err := pushRandomImage(ctx, img); err != nil {
			t.Fatalf("pushing %s: %v", img.ref(), err)
		}
		t.Logf("pushed %s (%d random layer(s) of %d MiB) in %.1fs", img.ref(), img.layers, img.layerB>>20, time.Since(start).Seconds())
	}
	t.Cleanup(func() {
		for _, img := range images {
			if err := b.rt.RemoveImage(context.Background(), img.ref()); err != nil {
				t.Errorf("removing %s from containerd: %v", img.ref(), err)
			}
		}
	})
	t.Logf("%d timed pulls per arm and size, node %s", pullIterations, pullNode)

	daemonPod, err := b.daemonPodName(ctx)
	if err != nil {
		t.Fatal(err)
	}

	samples := map[string]map[pullArm][]pullSample{}
	run := func(img benchImage, a pullArm, name string, timed bool) {
		t.Helper()
		var (
			s   pullSample
			err error
		)
		if a == armJob {
			s, err = b.pullJob(ctx, img, name, daemonPod)
		} else {
			s, err = b.pullDirect(ctx, img)
		}
		if err != nil {
			t.Fatalf("%s %s (%s): %v", img.size, name, a, err)
		}
		tag := fmt.Sprintf("%-5s %-9s", img.size, name)
		if !timed {
			tag = fmt.Sprintf("%-5s warm-up  ", img.size)
		}
		if a == armJob {
			t.Logf("%s %-13s total %7.3fs  spec-seen %6.3fs  daemon-start %6.3fs  daemon-end %7.3fs (PullImage %7.3fs, attempt %d)  pulling-seen %6.3fs  status-seen %7.3fs  tag start→completion %s",
				tag, a, s.total.Seconds(), s.specSeen.Seconds(), s.daemonStart.Seconds(), s.daemonEnd.Seconds(),
				s.daemonPull.Seconds(), s.attempts, s.pullingSeen.Seconds(), s.statusSeen.Seconds(), tagTimes(s))
		} else {
			t.Logf("%s %-13s total %7.3fs", tag, a, s.total.Seconds())
		}
		if timed {
			if samples[img.size] == nil {
				samples[img.size] = map[pullArm][]pullSample{}
			}
			samples[img.size][a] = append(samples[img.size][a], s)
		}
	}

	// One untimed pull per arm and size warms the daemon's, the controller's and containerd's
	// code paths and the registry's page cache; then the arms alternate, the first one switching
	// every iteration, both sizes in each round.
	for _, img := range images {
		run(img, armJob, "warmup-"+img.size, false)
		run(img, armDirect, "warmup-"+img.size, false)
	}
	for i := 0; i < pullIterations; i++ {
		order := []pullArm{armJob, armDirect}
		if i%2 == 1 {
			order = []pullArm{armDirect, armJob}
		}
		for _, img := range images {
			for _, a := range order {
				run(img, a, fmt.Sprintf("%s-%02d", img.size, i), true)
			}
		}
	}
	reportPulls(t, images, samples)
}

// pushRandomImage pushes an image of img.layers random layers of img.layerB bytes each. Random
// bytes do not compress, so the registry serves (and containerd unpacks) the full size.
func pushRandomImage(ctx context.Context, img benchImage) error {
	ref, err := name.ParseReference(img.ref())
	if err != nil {
		return err
	}
	image, err := random.Image(img.layerB, img.layers)
	if err != nil {
		return err
	}
	return remote.Write(ref, image, remote.WithContext(ctx))
}

// clearImage removes the image from containerd and checks that CRI ImageStatus reports it absent,
// so the pull that follows downloads and unpacks it in full.
func (b *env) clearImage(ctx context.Context, ref string) error {
	if err := b.rt.RemoveImage(ctx, ref); err != nil {
		return fmt.Errorf("RemoveImage %s: %w", ref, err)
	}
	info, present, err := b.rt.ImageStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("ImageStatus %s: %w", ref, err)
	}
	if present {
		return fmt.Errorf("%s still present after RemoveImage (id %s)", ref, info.ID)
	}
	return nil
}

// checkPresent checks that CRI reports the image present after a pull.
func (b *env) checkPresent(ctx context.Context, ref string) (string, error) {
	info, present, err := b.rt.ImageStatus(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("ImageStatus %s: %w", ref, err)
	}
	if !present {
		return "", fmt.Errorf("%s absent after a successful pull", ref)
	}
	return info.ID, nil
}

// pullDirect is the floor: one CRI PullImage of the reference straight to containerd's socket.
func (b *env) pullDirect(ctx context.Context, img benchImage) (pullSample, error) {
	if err := b.clearImage(ctx, img.ref()); err != nil {
		return pullSample{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	start := time.Now()
	_, err := b.rt.PullImage(callCtx, cri.PullRequest{Image: img.ref()})
	total := time.Since(start)
	if err != nil {
		return pullSample{}, fmt.Errorf("PullImage: %w", err)
	}
	if _, err := b.checkPresent(ctx, img.ref()); err != nil {
		return pullSample{}, err
	}
	return pullSample{total: total}, nil
}

// pullJobSpec is the arm's ImagePullJob: the one node by name, parallelism 1, completionPolicy
// Always, imagePullPolicy Always; pull timeout and retries left at their defaults.
func pullJobSpec(img benchImage, jobName, ns string) *appsv1beta1.ImagePullJob {
	return &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: ns},
		Spec: appsv1beta1.ImagePullJobSpec{
			Image: img.ref(),
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{pullNode}},
				Parallelism:      ptr.To(intstr.FromInt32(1)),
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always},
				ImagePullPolicy:  appsv1beta1.PullAlways,
			},
		},
	}
}

// pullJob runs one ImagePullJob of img to success and returns its timings. The job is deleted,
// gone, and its tag gone from the NodeImage (spec and status) before it returns.
func (b *env) pullJob(ctx context.Context, img benchImage, jobName, daemonPod string) (pullSample, error) {
	// A tag left by an earlier job would make this job's status ambiguous.
	if err := b.waitTagGone(ctx, img); err != nil {
		return pullSample{}, err
	}
	if err := b.clearImage(ctx, img.ref()); err != nil {
		return pullSample{}, err
	}
	jobs := b.kruise.AppsV1beta1().ImagePullJobs(b.ns)
	jw, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", jobName).String()})
	if err != nil {
		return pullSample{}, err
	}
	defer jw.Stop()
	nw, err := b.kruise.AppsV1beta1().NodeImages().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pullNode).String()})
	if err != nil {
		return pullSample{}, err
	}
	defer nw.Stop()

	start := time.Now()
	created, err := jobs.Create(ctx, pullJobSpec(img, jobName, b.ns), metav1.CreateOptions{})
	if err != nil {
		return pullSample{}, err
	}
	defer b.deletePullJob(jw, jobName)

	var (
		s        pullSample
		version  int64 = -1 // the tag's spec version once this job's request is in the NodeImage
		lastNI   string
		deadline = time.NewTimer(pullTimeout)
	)
	defer deadline.Stop()
	for s.total == 0 {
		select {
		case ev, ok := <-jw.ResultChan():
			if !ok {
				return pullSample{}, fmt.Errorf("ImagePullJob watch closed before success; NodeImage: %s", lastNI)
			}
			now := time.Since(start)
			j, isJob := ev.Object.(*appsv1beta1.ImagePullJob)
			if !isJob || j.UID != created.UID {
				continue
			}
			if j.Status.Failed > 0 {
				return pullSample{}, fmt.Errorf("job failed on %v: %s", j.Status.FailedNodes, j.Status.Message)
			}
			if j.Status.CompletionTime != nil && j.Status.Succeeded != 1 {
				return pullSample{}, fmt.Errorf("job completed with succeeded=%d: %s", j.Status.Succeeded, j.Status.Message)
			}
			if j.Status.Succeeded == 1 {
				s.total = now
			}
		case ev, ok := <-nw.ResultChan():
			if !ok {
				return pullSample{}, fmt.Errorf("NodeImage watch closed before the job succeeded; NodeImage: %s", lastNI)
			}
			now := time.Since(start)
			ni, isNI := ev.Object.(*appsv1beta1.NodeImage)
			if !isNI {
				continue
			}
			lastNI = describeTag(ni, img)
			if version < 0 {
				if v, ok := specVersion(ni, img, string(created.UID)); ok {
					version, s.specSeen = v, now
				}
			}
			if version >= 0 && s.statusSeen == 0 {
				if st, ok := tagStatus(ni, img); ok && st.Version == version {
					switch st.Phase {
					case appsv1beta1.ImagePhasePulling:
						if s.pullingSeen == 0 {
							s.pullingSeen = now
						}
					case appsv1beta1.ImagePhaseSucceeded:
						s.statusSeen = now
						if st.StartTime != nil {
							s.tagStart = st.StartTime.Time
						}
						if st.CompletionTime != nil {
							s.tagEnd = st.CompletionTime.Time
						}
					case appsv1beta1.ImagePhaseFailed:
						return pullSample{}, fmt.Errorf("daemon reports the pull failed: %s", st.Message)
					}
				}
			}
		case <-deadline.C:
			return pullSample{}, fmt.Errorf("no succeeded=1 after %s; NodeImage: %s", pullTimeout, lastNI)
		}
	}
	if version < 0 || s.statusSeen == 0 {
		// The NodeImage watch may deliver after the job's; wait a bounded time for it.
		if err := b.finishNodeImageTimes(ctx, nw, img, string(created.UID), start, &s, &version); err != nil {
			return pullSample{}, err
		}
	}
	if _, err := b.checkPresent(ctx, img.ref()); err != nil {
		return pullSample{}, err
	}
	if err := b.daemonTimes(ctx, daemonPod, img, version, start, &s); err != nil {
		return pullSample{}, err
	}
	return s, nil
}

// finishNodeImageTimes keeps reading the NodeImage watch, for at most a minute, until it has
// seen this job's tag in spec and its status Succeeded.
func (b *env) finishNodeImageTimes(ctx context.Context, nw watch.Interface, img benchImage, uid string, start time.Time, s *pullSample, version *int64) error {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for *version < 0 || s.statusSeen == 0 {
		select {
		case ev, ok := <-nw.ResultChan():
			if !ok {
				return fmt.Errorf("NodeImage watch closed")
			}
			now := time.Since(start)
			ni, isNI := ev.Object.(*appsv1beta1.NodeImage)
			if !isNI {
				continue
			}
			if *version < 0 {
				if v, ok := specVersion(ni, img, uid); ok {
					*version, s.specSeen = v, now
				}
			}
			if st, ok := tagStatus(ni, img); ok && *version >= 0 && st.Version == *version && st.Phase == appsv1beta1.ImagePhaseSucceeded {
				s.statusSeen = now
				if st.StartTime != nil {
					s.tagStart = st.StartTime.Time
				}
				if st.CompletionTime != nil {
					s.tagEnd = st.CompletionTime.Time
				}
			}
		case <-deadline.C:
			return fmt.Errorf("job succeeded but the NodeImage never showed its tag Succeeded (spec seen: %t)", *version >= 0)
		}
	}
	return nil
}

// specVersion is the spec version of img's tag in the NodeImage if the tag is requested by the
// job with this UID.
func specVersion(ni *appsv1beta1.NodeImage, img benchImage, uid string) (int64, bool) {
	for _, t := range ni.Spec.Images[img.repo].Tags {
		if t.Tag != img.tag {
			continue
		}
		for _, o := range t.OwnerReferences {
			if string(o.UID) == uid {
				return t.Version, true
			}
		}
	}
	return 0, false
}

func tagStatus(ni *appsv1beta1.NodeImage, img benchImage) (appsv1beta1.ImageTagStatus, bool) {
	for _, st := range ni.Status.ImageStatuses[img.repo].Tags {
		if st.Tag == img.tag {
			return st, true
		}
	}
	return appsv1beta1.ImageTagStatus{}, false
}

// describeTag is img's tag in the NodeImage, spec and status, for errors.
func describeTag(ni *appsv1beta1.NodeImage, img benchImage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rv %s", ni.ResourceVersion)
	for _, t := range ni.Spec.Images[img.repo].Tags {
		if t.Tag == img.tag {
			fmt.Fprintf(&b, "; spec version %d, %d owner(s)", t.Version, len(t.OwnerReferences))
		}
	}
	if st, ok := tagStatus(ni, img); ok {
		fmt.Fprintf(&b, "; status version %d %s %q", st.Version, st.Phase, st.Message)
	}
	return b.String()
}

// waitTagGone waits (by watch) until the NodeImage has img's tag neither in spec nor in status.
func (b *env) waitTagGone(ctx context.Context, img benchImage) error {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	present := func(ni *appsv1beta1.NodeImage) bool {
		for _, t := range ni.Spec.Images[img.repo].Tags {
			if t.Tag == img.tag {
				return true
			}
		}
		_, ok := tagStatus(ni, img)
		return ok
	}
	for {
		ni, err := b.kruise.AppsV1beta1().NodeImages().Get(ctx, pullNode, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("NodeImage %s: %w", pullNode, err)
		}
		if !present(ni) {
			return nil
		}
		w, err := b.kruise.AppsV1beta1().NodeImages().Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", pullNode).String(),
			ResourceVersion: ni.ResourceVersion,
		})
		if err != nil {
			return err
		}
		last := describeTag(ni, img)
		for ev := range w.ResultChan() {
			if cur, ok := ev.Object.(*appsv1beta1.NodeImage); ok {
				last = describeTag(cur, img)
				if !present(cur) {
					w.Stop()
					return nil
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("tag %s still in NodeImage %s after %s: %s", img.ref(), pullNode, pullTimeout, last)
		}
		// The watch ended early: read again.
	}
}

// deletePullJob deletes the job and waits, on its watch, for it to be gone: the controller
// removes its finalizer once the request is withdrawn from the NodeImage.
func (b *env) deletePullJob(jw watch.Interface, jobName string) {
	ctx, cancel := context.WithTimeout(context.Background(), pullTimeout)
	defer cancel()
	err := b.kruise.AppsV1beta1().ImagePullJobs(b.ns).Delete(ctx, jobName, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) || err != nil {
		return
	}
	for {
		select {
		case ev, ok := <-jw.ResultChan():
			if !ok {
				// Fall back to polling the object if the watch closed.
				_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
					_, err := b.kruise.AppsV1beta1().ImagePullJobs(b.ns).Get(ctx, jobName, metav1.GetOptions{})
					return apierrors.IsNotFound(err), nil
				})
				return
			}
			if ev.Type == watch.Deleted {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// daemonPodName is the kruise-daemon pod on the benchmark's node.
func (b *env) daemonPodName(ctx context.Context) (string, error) {
	list, err := b.client.CoreV1().Pods(kruiseNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: daemonLabel,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", pullNode).String(),
	})
	if err != nil {
		return "", err
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("no running pod %s on node %s in %s", daemonLabel, pullNode, kruiseNamespace)
}

var durationField = regexp.MustCompile(`duration="([^"]+)"`)

var attemptField = regexp.MustCompile(` attempt=(\d+)`)

// daemonTimes reads the daemon's log since the trigger for its "Pulling image" and "Pulled image"
// lines of this tag and version, and fills in the daemon's side of the sample. The container
// log's timestamps are taken from the same host clock as the trigger. The lines are written
// before the status that made the job succeed, but reach the log file asynchronously: the read
// is retried for a few seconds.
func (b *env) daemonTimes(ctx context.Context, pod string, img benchImage, version int64, start time.Time, s *pullSample) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		lastErr = b.readDaemonTimes(ctx, pod, img, version, start, s)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("daemon log of %s: %v", pod, lastErr)
	}
	return nil
}

func (b *env) readDaemonTimes(ctx context.Context, pod string, img benchImage, version int64, start time.Time, s *pullSample) error {
	since := metav1.NewTime(start.Add(-2 * time.Second)) // sinceTime has whole-second resolution
	stream, err := b.client.CoreV1().Pods(kruiseNamespace).GetLogs(pod, &corev1.PodLogOptions{SinceTime: &since, Timestamps: true}).Stream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	match := []string{`image="` + img.repo + `"`, `tag="` + img.tag + `"`, ` version=` + strconv.FormatInt(version, 10) + ` `}
	var pulling, pulled time.Time
	var dur time.Duration
	attempts := 0
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		ts, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(start) {
			continue
		}
		all := true
		for _, m := range match {
			all = all && strings.Contains(rest+" ", m)
		}
		if !all {
			continue
		}
		switch {
		case strings.Contains(rest, `"Pulling image"`):
			pulling = at
			if m := attemptField.FindStringSubmatch(rest); m != nil {
				attempts, _ = strconv.Atoi(m[1])
			}
		case strings.Contains(rest, `"Pulled image"`):
			pulled = at
			if m := durationField.FindStringSubmatch(rest); m != nil {
				if d, err := time.ParseDuration(m[1]); err == nil {
					dur = d
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if pulling.IsZero() || pulled.IsZero() {
		return fmt.Errorf("no \"Pulling image\"/\"Pulled image\" lines for %s version %d since %s (pulling %t, pulled %t)",
			img.ref(), version, start.Format(time.RFC3339Nano), !pulling.IsZero(), !pulled.IsZero())
	}
	s.daemonStart, s.daemonEnd, s.daemonPull, s.attempts = pulling.Sub(start), pulled.Sub(start), dur, attempts
	return nil
}

func tagTimes(s pullSample) string {
	if s.tagStart.IsZero() || s.tagEnd.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s→%s (%.0fs)", s.tagStart.UTC().Format("15:04:05"), s.tagEnd.UTC().Format("15:04:05"), s.tagEnd.Sub(s.tagStart).Seconds())
}

func reportPulls(t *testing.T, images []benchImage, samples map[string]map[pullArm][]pullSample) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%+.0f ms", float64(d)/float64(time.Millisecond)) }
	pick := func(ss []pullSample, f func(pullSample) time.Duration) stats {
		out := make([]time.Duration, 0, len(ss))
		for _, s := range ss {
			out = append(out, f(s))
		}
		return durationStats(out)
	}
	total := func(s pullSample) time.Duration { return s.total }
	for _, img := range images {
		for _, a := range []pullArm{armJob, armDirect} {
			ss := samples[img.size][a]
			vals := make([]string, 0, len(ss))
			for _, s := range ss {
				vals = append(vals, fmt.Sprintf("%.3f", s.total.Seconds()))
			}
			t.Logf("%-5s %-13s n=%d per pull (s): %s", img.size, a, len(ss), strings.Join(vals, " "))
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "\ntrigger → pulled (image removed from containerd before every pull), one pull at a time\n\n")
	fmt.Fprintf(&out, "| image | arm | n | p50 | p90 | min | max |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, img := range images {
		for _, a := range []pullArm{armJob, armDirect} {
			label := "(a) ImagePullJob create → succeeded=1"
			if a == armDirect {
				label = "(b) CRI PullImage (floor)"
			}
			ss := samples[img.size][a]
			st := pick(ss, total)
			fmt.Fprintf(&out, "| %s (%d × %d MiB) | %s | %d | %s | %s | %s | %s |\n", img.size, img.layers, img.layerB>>20, label, len(ss),
				sec(st.p50), sec(st.p90), sec(st.min), sec(st.max))
		}
	}
	fmt.Fprintf(&out, "\n| image | ratio p50 (a)/(b) | overhead p50 (a) − p50 (b) | ratio ≤ 1.10 | overhead ≤ 300 ms |\n| --- | --- | --- | --- | --- |\n")
	for _, img := range images {
		a, d := pick(samples[img.size][armJob], total), pick(samples[img.size][armDirect], total)
		ratio := a.p50.Seconds() / d.p50.Seconds()
		over := a.p50 - d.p50
		fmt.Fprintf(&out, "| %s | %.3f | %s | %s | %s |\n", img.size, ratio, ms(over), verdict(ratio <= 1.10), verdict(over <= 300*time.Millisecond))
	}
	fmt.Fprintf(&out, "\nImagePullJob arm, where the time goes, p50 / p90 from the Create (client receipt times of watch events; daemon log timestamps):\n\n")
	fmt.Fprintf(&out, "| image | tag in NodeImage spec seen | daemon \"Pulling image\" | daemon \"Pulled image\" | daemon's PullImage duration | NodeImage status Succeeded seen | job succeeded=1 seen | floor PullImage |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, img := range images {
		ss := samples[img.size][armJob]
		cell := func(f func(pullSample) time.Duration) string {
			st := pick(ss, f)
			return sec(st.p50) + " / " + sec(st.p90)
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", img.size,
			cell(func(s pullSample) time.Duration { return s.specSeen }),
			cell(func(s pullSample) time.Duration { return s.daemonStart }),
			cell(func(s pullSample) time.Duration { return s.daemonEnd }),
			cell(func(s pullSample) time.Duration { return s.daemonPull }),
			cell(func(s pullSample) time.Duration { return s.statusSeen }),
			cell(total),
			func() string {
				st := pick(samples[img.size][armDirect], total)
				return sec(st.p50) + " / " + sec(st.p90)
			}())
	}
	fmt.Fprintf(&out, "\nImagePullJob arm, p50 / p90 of each step's own span:\n\n")
	fmt.Fprintf(&out, "| image | Create → daemon starts PullImage | daemon's PullImage | daemon done → status Succeeded seen | status seen → job succeeded=1 seen | (a) − daemon's PullImage |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, img := range images {
		ss := samples[img.size][armJob]
		cell := func(f func(pullSample) time.Duration) string {
			st := pick(ss, f)
			return sec(st.p50) + " / " + sec(st.p90)
		}
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s | %s |\n", img.size,
			cell(func(s pullSample) time.Duration { return s.daemonStart }),
			cell(func(s pullSample) time.Duration { return s.daemonPull }),
			cell(func(s pullSample) time.Duration { return s.statusSeen - s.daemonEnd }),
			cell(func(s pullSample) time.Duration { return s.total - s.statusSeen }),
			cell(func(s pullSample) time.Duration { return s.total - s.daemonPull }))
	}
	t.Log(out.String())
}
