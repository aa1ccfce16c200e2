package imagepull

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const repo = "registry.example.com/app"

func img(tag string) string { return repo + ":" + tag }

// blobError is a transient failure: the registry answered a blob with 503.
func blobError(tag string) error {
	return fmt.Errorf("CRI PullImage %s: %w", img(tag),
		status.Error(codes.Unknown, fmt.Sprintf("failed to pull and unpack image %q: failed to copy: httpReadSeeker: failed open: unexpected status code https://registry.example.com/v2/app/blobs/sha256:ab: 503 Service Unavailable", img(tag))))
}

func notFound(tag string) error {
	return fmt.Errorf("CRI PullImage %s: %w", img(tag),
		status.Error(codes.NotFound, fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", img(tag), img(tag), img(tag))))
}

func TestIfNotPresentAlreadyPresent(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", ifNotPresent))))
	f.images.present[img("v1")] = "sha256:old"
	f.start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, "sha256:old", got.ImageID)
	assert.Equal(t, int64(1), got.Version)
	assert.NotNil(t, got.CompletionTime)
	assert.Empty(t, f.images.requests(), "present image must not be pulled")
	assert.Equal(t, 1.0, f.pulls(resultPresent))
}

func TestIfNotPresentAbsentPulls(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", ifNotPresent)))).start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, "sha256:id-of-"+img("v1"), got.ImageID)
	assert.Equal(t, []string{img("v1")}, f.images.pulled())
	assert.Equal(t, metav1.NewTime(tNow).UTC(), got.StartTime.UTC())
	assert.Equal(t, 1.0, f.pulls(resultSucceeded))
	assert.Equal(t, 0.0, f.inFlight())
	require.Eventually(t, func() bool {
		for _, e := range f.events() {
			if strings.Contains(e, EventPullSucceeded) && strings.Contains(e, img("v1")) {
				return true
			}
		}
		return false
	}, wait, tick)
}

func TestAlwaysPullsEvenIfPresent(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"))))
	f.images.present[img("v1")] = "sha256:old"
	f.start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, "sha256:id-of-"+img("v1"), got.ImageID)
	assert.Equal(t, []string{img("v1")}, f.images.pulled())
	f.images.mu.Lock()
	assert.Empty(t, f.images.statuses, "Always does not ask for the image's presence")
	f.images.mu.Unlock()
}

func TestDigestTagJoinsWithAt(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec(digest)))).start()
	f.waitPhase(repo, digest, appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, []string{repo + "@" + digest}, f.images.pulled())
}

func TestConcurrencyLimit(t *testing.T) {
	gates := map[string]chan struct{}{}
	var tags []appsv1beta1.ImageTagSpec
	for i := range 5 {
		tag := fmt.Sprintf("v%d", i)
		tags = append(tags, tagSpec(tag))
		gates[tag] = make(chan struct{})
	}
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tags...)), func(c *Config) { c.MaxConcurrentPulls = 2 })
	for tag, g := range gates {
		f.images.set(img(tag), &behaviour{gate: g})
	}
	f.start()

	f.waitFor(func() bool { return f.images.running() == 2 }, "two pulls under way")
	f.waitFor(func() bool {
		s := f.status()
		return s.Desired == 5 && s.Pulling == 2 && s.Waiting == 3
	}, "status shows 2 pulling and 3 waiting")
	waiting := 0
	for _, ts := range f.status().ImageStatuses[repo].Tags {
		if ts.Phase == appsv1beta1.ImagePhaseWaiting {
			waiting++
			assert.Nil(t, ts.StartTime)
		}
	}
	assert.Equal(t, 3, waiting)

	for done := 1; done <= 5; done++ {
		// Release one of the running pulls.
		reqs := f.images.pulled()
		for _, r := range reqs {
			tag := strings.TrimPrefix(r, repo+":")
			if g := gates[tag]; g != nil {
				close(g)
				delete(gates, tag)
				break
			}
		}
		f.waitFor(func() bool { return f.status().Succeeded == int32(done) }, fmt.Sprintf("%d succeeded", done))
	}
	s := f.status()
	assert.Equal(t, appsv1beta1.NodeImageStatus{Desired: 5, Succeeded: 5}, appsv1beta1.NodeImageStatus{
		Desired: s.Desired, Succeeded: s.Succeeded, Failed: s.Failed, Pulling: s.Pulling, Waiting: s.Waiting})
	f.images.mu.Lock()
	assert.Equal(t, 2, f.images.maxActive, "never more than 2 PullImage at once")
	f.images.mu.Unlock()
}

func TestAttemptTimeoutThenFailed(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(10, 1, 0)))))
	f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
	f.start()

	f.waitFor(func() bool { return f.images.calls() == 1 }, "first attempt")
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhasePulling)
	f.clock.Step(9 * time.Second)
	assert.Equal(t, 1, f.images.calls())
	f.clock.Step(time.Second)
	f.waitFor(func() bool { return f.images.calls() == 2 }, "second attempt after the timeout")
	f.clock.Step(10 * time.Second)

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, "after 2 attempts")
	assert.Contains(t, got.Message, "Timeout: pull attempt timed out after 10s")
	assert.NotNil(t, got.CompletionTime)
	assert.Equal(t, int32(1), f.status().Failed)
	assert.Equal(t, 1.0, f.pulls(resultFailed))
}

func TestRetriesWithBackoffThenFailed(t *testing.T) {
	var backoffs []int
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 2, 0)))),
		func(c *Config) {
			c.Backoff = func(n int) time.Duration {
				backoffs = append(backoffs, n)
				return time.Duration(n) * 5 * time.Second
			}
		})
	f.images.set(img("v1"), &behaviour{errs: []error{blobError("v1"), blobError("v1"), blobError("v1")}})
	f.start()

	f.waitFor(func() bool { return f.images.calls() == 1 }, "first attempt")
	f.waitFor(func() bool { return strings.Contains(f.tag(repo, "v1").Message, "retrying in 5s") }, "backoff shown")
	assert.Equal(t, appsv1beta1.ImagePhasePulling, f.tag(repo, "v1").Phase)
	f.stepUntil(time.Second, func() bool { return f.images.calls() == 2 }, "second attempt after backoff")
	f.stepUntil(time.Second, func() bool { return f.images.calls() == 3 }, "third attempt after backoff")

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Equal(t, 3, f.images.calls(), "backoffLimit 2 is 3 attempts")
	assert.Equal(t, []int{1, 2}, backoffs)
	assert.Contains(t, got.Message, "after 3 attempts: PullFailed:")
	assert.Contains(t, got.Message, `failed to copy: httpReadSeeker: failed open: unexpected status code`, "the runtime's wording is kept")
	assert.NotContains(t, got.Message, "rpc error")
}

func TestSuccessAfterFailedAttempt(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"))))
	f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unavailable, "connection refused")}})
	f.start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, 2, f.images.calls())
	assert.Empty(t, got.Message)
	assert.Equal(t, "sha256:id-of-"+img("v1"), got.ImageID)
}

// A runtime that does not answer (containerd restarting) does not use up
// the tag's retries: with backoffLimit 1, four Unavailable answers and then
// a failed attempt still leave one retry, and the status says what it waits for.
func TestRuntimeUnavailableDoesNotUseUpRetries(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 1, 0)))),
		func(c *Config) { c.Backoff = func(int) time.Duration { return time.Second } })
	down := status.Error(codes.Unavailable, "connection error: dial unix /run/containerd/containerd.sock: connect: connection refused")
	f.images.set(img("v1"), &behaviour{errs: []error{down, down, down, down, blobError("v1")}})
	f.start()

	f.waitFor(func() bool { return f.images.calls() == 1 }, "first attempt")
	f.waitFor(func() bool { return strings.Contains(f.tag(repo, "v1").Message, "waiting for the container runtime") }, "wait shown")
	for n := 2; n <= 5; n++ {
		f.stepUntil(time.Second, func() bool { return f.images.calls() == n }, "next attempt after backoff")
		assert.Equal(t, appsv1beta1.ImagePhasePulling, f.tag(repo, "v1").Phase, "after attempt %d", n)
	}
	f.stepUntil(time.Second, func() bool { return f.images.calls() == 6 }, "the retry the failed attempt left")
	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, 6, f.images.calls(), "4 unanswered + 1 failed + 1 succeeded")
	assert.Empty(t, got.Message)
}

func TestActiveDeadline(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 3, 30)))))
	f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
	f.start()

	f.waitFor(func() bool { return f.images.calls() == 1 }, "pull started")
	f.clock.Step(30 * time.Second)
	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, "activeDeadlineSeconds (30) exceeded")
	assert.Equal(t, 1, f.images.calls(), "no retry past the deadline")
}

// startedEarlier is a NodeImage whose status says a daemon of this node
// began pulling tag (version 1) at when: the daemon restarted since.
func startedEarlier(ni *appsv1beta1.NodeImage, tag string, when time.Time) *appsv1beta1.NodeImage {
	if ni.Status.ImageStatuses == nil {
		ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{}
	}
	st := ni.Status.ImageStatuses[repo]
	st.Tags = append(st.Tags, appsv1beta1.ImageTagStatus{Tag: tag, Version: 1, Phase: appsv1beta1.ImagePhasePulling, StartTime: ptr.To(metav1.NewTime(when))})
	ni.Status.ImageStatuses[repo] = st
	return ni
}

// The deadline counts on this node's clock from when a daemon of this node
// began the pull: a restarted daemon keeps the time its predecessor wrote.
func TestActiveDeadlinePassedBeforeStart(t *testing.T) {
	ni := gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 3, 30))))
	f := newFixture(t, startedEarlier(ni, "v1", tNow.Add(-time.Hour))).start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, "activeDeadlineSeconds (30) passed before the pull started")
	assert.Empty(t, f.images.requests())
}

// createdAt is the controller's clock: however far the node's clock is from
// it, the deadline is the same on the node (30 s from its first sight).
func TestActiveDeadlineIgnoresTheControllerClock(t *testing.T) {
	for _, skew := range []time.Duration{-time.Hour, -40 * time.Second, 40 * time.Second, time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			created := metav1.NewTime(tNow.Add(skew))
			f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 3, 30),
				func(s *appsv1beta1.ImageTagSpec) { s.CreatedAt = &created }))))
			f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
			f.start()
			f.waitFor(func() bool { return f.images.calls() == 1 }, "pull started")
			f.clock.Step(29 * time.Second)
			assert.Never(t, func() bool { return f.tag(repo, "v1").Phase == appsv1beta1.ImagePhaseFailed }, 200*time.Millisecond, 20*time.Millisecond,
				"failed before its 30 s on this node's clock")
			f.clock.Step(time.Second)
			got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
			assert.Contains(t, got.Message, "activeDeadlineSeconds (30) exceeded")
		})
	}
}

func TestRemovedTagCancelsPull(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")), gen.AddNodeImageTags("other", tagSpec("keep"))))
	f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
	f.start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhasePulling)
	f.waitPhase("other", "keep", appsv1beta1.ImagePhaseSucceeded)

	f.edit(func(s *appsv1beta1.NodeImageSpec) { delete(s.Images, repo) })
	f.waitFor(func() bool {
		f.images.mu.Lock()
		defer f.images.mu.Unlock()
		return len(f.images.cancelled) == 1
	}, "pull cancelled")
	f.waitFor(func() bool {
		s := f.status()
		_, ok := s.ImageStatuses[repo]
		return !ok && s.Desired == 1 && s.Pulling == 0
	}, "status entry dropped")
	assert.Equal(t, appsv1beta1.ImagePhaseSucceeded, f.tag("other", "keep").Phase)
	f.waitFor(func() bool { return f.pulls(resultCancelled) == 1 }, "cancelled counted")
}

func TestVersionBumpRepulls(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")))).start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)

	gate := make(chan struct{})
	f.images.set(img("v1"), &behaviour{gate: gate})
	f.edit(func(s *appsv1beta1.NodeImageSpec) { s.Images[repo].Tags[0].Version = 2 })
	f.waitFor(func() bool { t := f.tag(repo, "v1"); return t.Version == 2 && t.Phase == appsv1beta1.ImagePhasePulling }, "v2 pulling")
	assert.Empty(t, f.tag(repo, "v1").ImageID, "the old version's result is gone")

	// A bump during the pull cancels it and pulls again.
	f.edit(func(s *appsv1beta1.NodeImageSpec) { s.Images[repo].Tags[0].Version = 3 })
	f.waitFor(func() bool { return f.images.calls() == 3 }, "v3 pull")
	f.waitFor(func() bool {
		f.images.mu.Lock()
		defer f.images.mu.Unlock()
		return len(f.images.cancelled) == 1
	}, "v2 pull cancelled")
	close(gate)
	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, int64(3), got.Version)
}

func TestRestartKeepsFinishedAndRedoesTheRest(t *testing.T) {
	done := metav1.NewTime(tNow.Add(-time.Minute))
	ni := gen.NodeImage(node, gen.AddNodeImageTags(repo,
		tagSpec("ok"), tagSpec("bad"), tagSpec("pulling"), tagSpec("old", func(s *appsv1beta1.ImageTagSpec) { s.Version = 2 }),
	))
	ni.Status = appsv1beta1.NodeImageStatus{
		Desired: 4, Succeeded: 2, Failed: 1, Pulling: 1,
		ImageStatuses: map[string]appsv1beta1.ImageStatus{repo: {Tags: []appsv1beta1.ImageTagStatus{
			{Tag: "ok", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 1, ImageID: "sha256:ok", StartTime: &done, CompletionTime: &done},
			{Tag: "bad", Phase: appsv1beta1.ImagePhaseFailed, Version: 1, Message: "NotFound", StartTime: &done, CompletionTime: &done},
			{Tag: "pulling", Phase: appsv1beta1.ImagePhasePulling, Version: 1, StartTime: &done},
			{Tag: "old", Phase: appsv1beta1.ImagePhaseSucceeded, Version: 1, ImageID: "sha256:old", CompletionTime: &done},
		}}},
		FirstSyncStatus: &appsv1beta1.SyncStatus{SyncAt: done, Status: appsv1beta1.SyncStatusSucceeded},
	}
	f := newFixture(t, ni).start()

	f.waitPhase(repo, "pulling", appsv1beta1.ImagePhaseSucceeded)
	got := f.waitPhase(repo, "old", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, int64(2), got.Version)
	assert.Equal(t, "sha256:id-of-"+img("old"), got.ImageID)
	assert.ElementsMatch(t, []string{img("pulling"), img("old")}, f.images.pulled())
	s := f.status()
	assert.Equal(t, "sha256:ok", f.tag(repo, "ok").ImageID)
	assert.Equal(t, appsv1beta1.ImagePhaseFailed, f.tag(repo, "bad").Phase)
	assert.Equal(t, "NotFound", f.tag(repo, "bad").Message)
	assert.Equal(t, int32(3), s.Succeeded)
	assert.Equal(t, int32(1), s.Failed)
	assert.True(t, s.FirstSyncStatus.SyncAt.Equal(&done), "firstSyncStatus is kept")
}

func TestRestartOfTheDaemon(t *testing.T) {
	ni := gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("fast"), tagSpec("slow")))
	f := newFixture(t, ni)
	f.images.set(img("slow"), &behaviour{gate: make(chan struct{})})
	f.start()
	f.waitPhase(repo, "fast", appsv1beta1.ImagePhaseSucceeded)
	f.waitPhase(repo, "slow", appsv1beta1.ImagePhasePulling)
	f.stopOnce()

	// A new daemon on the status the first one left.
	g := newFixture(t, f.nodeImage())
	g.start()
	g.waitPhase(repo, "slow", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, []string{img("slow")}, g.images.pulled(), "the finished tag is not pulled again")
	assert.Equal(t, "sha256:id-of-"+img("fast"), g.tag(repo, "fast").ImageID)
}

func TestSandboxConfigReachesTheRequest(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")), gen.SetNodeImageSandboxConfig(repo, &appsv1beta1.SandboxConfig{
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{"io.containerd.snapshotter": "stargz"},
	}))).start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)

	reqs := f.images.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, map[string]string{"team": "a"}, reqs[0].SandboxLabels)
	assert.Equal(t, map[string]string{
		"io.containerd.snapshotter":          "stargz",
		appsv1beta1.PullingImageByAnnotation: appsv1beta1.PullingImageByValue,
	}, reqs[0].SandboxAnnotations)
	assert.Nil(t, reqs[0].Auth, "no credentials: anonymous")
}

func TestPullingImageByAnnotationWithoutSandboxConfig(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")))).start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Equal(t, map[string]string{appsv1beta1.PullingImageByAnnotation: appsv1beta1.PullingImageByValue},
		f.images.requests()[0].SandboxAnnotations)
}

func TestCredentialsTriedInOrder(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")),
		gen.SetNodeImagePullSecrets(repo, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: "regcred"})))
	f.addSecret("regcred")
	f.keyring.creds = []Credential{
		{Auth: cri.Auth{Username: "first", Password: "p1"}, Source: "secret a"},
		{Auth: cri.Auth{Username: "second", Password: "p2"}, Source: "secret b"},
	}
	f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unknown, "failed to authorize: 401 Unauthorized")}})
	f.start()

	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	reqs := f.images.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "first", reqs[0].Auth.Username)
	assert.Equal(t, "second", reqs[1].Auth.Username)
	f.keyring.mu.Lock()
	assert.Equal(t, [][]string{{daemonNS + "/regcred"}}, f.keyring.secrets)
	f.keyring.mu.Unlock()
}

func TestAllCredentialsFailAndProblemsAreReported(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 0, 0)))))
	f.keyring.creds = []Credential{{Auth: cri.Auth{Username: "u", Password: "s3cr3t"}, Source: "secret a"}}
	f.keyring.problems = []error{errors.New("secret kruise-daemon-config/broken: no .dockerconfigjson")}
	f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unknown, "pull access denied, repository does not exist or may require authorization")}})
	f.start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, "Unauthorized: pull access denied")
	assert.Contains(t, got.Message, "credential problems: secret kruise-daemon-config/broken: no .dockerconfigjson")
	assert.NotContains(t, got.Message, "s3cr3t")
	for _, e := range f.events() {
		assert.NotContains(t, e, "s3cr3t")
	}
}

func TestSecretOutsideDaemonNamespaceRefused(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")),
		gen.SetNodeImagePullSecrets(repo, appsv1beta1.ReferenceObject{Namespace: "default", Name: "regcred"}))).start()

	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, `pull secret "default/regcred" is not in namespace kruise-daemon-config`)
	assert.Contains(t, got.Message, "after 1 attempt:")
	assert.Empty(t, f.images.requests())
}

// A missing pull secret does not stop the pull: a public image (or one the
// other credentials can pull) is pulled at once, as the kubelet does. The
// image's secrets are those of every job pulling it.
func TestMissingSecretDoesNotStopThePull(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")),
		gen.SetNodeImagePullSecrets(repo, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: "gone"}, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: "here"})))
	f.addSecret("here")
	f.start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
	assert.Len(t, f.images.requests(), 1)
	assert.Equal(t, [][]string{{daemonNS + "/here"}}, f.keyring.lookups(), "the credentials there are")
}

// A private image whose secret is missing fails its attempts with the
// registry's answer and the missing secret named, and is pulled once the
// secret appears.
func TestMissingSecretIsRetriedUntilItAppears(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1")),
		gen.SetNodeImagePullSecrets(repo, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: "regcred"})),
		func(c *Config) { c.Backoff = func(int) time.Duration { return 10 * time.Second } })
	f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unknown, "failed to authorize: 401 Unauthorized")}})
	f.start()

	f.waitFor(func() bool {
		return strings.Contains(f.tag(repo, "v1").Message, "PullSecretNotFound: pull secret not found: kruise-daemon-config/regcred")
	}, "missing secret named")
	assert.Contains(t, f.tag(repo, "v1").Message, "attempt 1 failed: Unauthorized")
	f.addSecret("regcred")
	f.stepUntil(time.Second, func() bool { return f.tag(repo, "v1").Phase == appsv1beta1.ImagePhaseSucceeded }, "pulled once the secret exists")
	assert.Len(t, f.images.requests(), 2)
	assert.Equal(t, [][]string{nil, {daemonNS + "/regcred"}}, f.keyring.lookups())
}

func TestMissingSecretFails(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1", withPolicy(600, 0, 0))),
		gen.SetNodeImagePullSecrets(repo, appsv1beta1.ReferenceObject{Namespace: daemonNS, Name: "gone"})))
	f.images.set(img("v1"), &behaviour{errs: []error{status.Error(codes.Unknown, "pull access denied, repository does not exist or may require authorization")}})
	f.start()
	got := f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseFailed)
	assert.Contains(t, got.Message, "failed to pull "+img("v1")+" after 1 attempt: Unauthorized")
	assert.Contains(t, got.Message, "credential problems: PullSecretNotFound: pull secret not found: kruise-daemon-config/gone")
}

func TestStatusCountersAndFirstSync(t *testing.T) {
	f := newFixture(t, startedEarlier(gen.NodeImage(node,
		// ok is present, bad is past its deadline: neither needs a slot.
		gen.AddNodeImageTags(repo, tagSpec("ok", ifNotPresent), tagSpec("slow"), tagSpec("bad", withPolicy(600, 0, 30))),
		gen.AddNodeImageTags("other", tagSpec("w1"), tagSpec("w2")),
	), "bad", tNow.Add(-time.Hour)), func(c *Config) { c.MaxConcurrentPulls = 2 })
	f.images.present[img("ok")] = "sha256:ok"
	slow := make(chan struct{})
	for _, i := range []string{img("slow"), "other:w1", "other:w2"} {
		f.images.set(i, &behaviour{gate: slow})
	}
	f.start()

	f.waitFor(func() bool {
		s := f.status()
		return s.Desired == 5 && s.Succeeded == 1 && s.Failed == 1 && s.Pulling == 2 && s.Waiting == 1
	}, "1 succeeded, 1 failed, 2 pulling, 1 waiting")
	s := f.status()
	require.NotNil(t, s.FirstSyncStatus)
	assert.Equal(t, appsv1beta1.SyncStatusSucceeded, s.FirstSyncStatus.Status)
	first := s.FirstSyncStatus.SyncAt

	f.clock.Step(time.Hour)
	close(slow)
	f.waitFor(func() bool { return f.status().Succeeded == 4 }, "all pulled")
	s = f.status()
	assert.Equal(t, [3]int32{0, 0, 1}, [3]int32{s.Pulling, s.Waiting, s.Failed})
	assert.True(t, s.FirstSyncStatus.SyncAt.Equal(&first), "firstSyncStatus is written once")
}

func TestNoStatusWriteWhenNothingChanged(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"), tagSpec("v2")))).start()
	f.waitFor(func() bool { return f.status().Succeeded == 2 }, "pulled")

	before := f.statusPatches()
	// A spec change that changes no status (another owner of the tag).
	f.edit(func(s *appsv1beta1.NodeImageSpec) {
		s.Images[repo].Tags[0].OwnerReferences = append(s.Images[repo].Tags[0].OwnerReferences, corev1ObjectRef("job-2"))
	})
	f.waitFor(func() bool {
		f.p.mu.Lock()
		defer f.p.mu.Unlock()
		return len(f.p.obj.Spec.Images[repo].Tags[0].OwnerReferences) == 1
	}, "puller saw the change")
	require.NoError(t, f.p.writeStatus(f.ctx))
	assert.Equal(t, before, f.statusPatches(), "nothing to write")

	// The spec was not overwritten by the status writes.
	assert.Len(t, f.nodeImage().Spec.Images[repo].Tags[0].OwnerReferences, 1)
}

func TestStatusWritesBatchedUnderBurst(t *testing.T) {
	var tags []appsv1beta1.ImageTagSpec
	for i := range 20 {
		tags = append(tags, tagSpec(fmt.Sprintf("v%d", i), ifNotPresent))
	}
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tags...)),
		func(c *Config) { c.StatusQPS, c.StatusBurst = 1, 1 })
	for i := range 20 {
		f.images.present[img(fmt.Sprintf("v%d", i))] = "sha256:x"
	}
	f.start()

	f.waitFor(func() bool {
		for _, ph := range f.phases() {
			if ph != appsv1beta1.ImagePhaseSucceeded {
				return false
			}
		}
		return len(f.phases()) == 20
	}, "all done in memory")
	f.waitFor(func() bool { return f.statusPatches() >= 1 }, "first write at once")
	f.stepUntil(time.Second, func() bool { return f.status().Succeeded == 20 }, "all written")
	assert.LessOrEqual(t, f.statusPatches(), 2, "20 changes in at most 2 writes")
}

func TestFirstStatusWriteIsImmediate(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"))),
		func(c *Config) { c.StatusQPS, c.StatusBurst = 5, 10 })
	gate := make(chan struct{})
	f.images.set(img("v1"), &behaviour{gate: gate})
	f.start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhasePulling)
	close(gate)
	// No clock step: a token is at hand, the write goes out at once.
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhaseSucceeded)
}

func TestStatusWriteErrorIsRetried(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"))))
	failOnce(f)
	f.start()
	f.stepUntil(time.Second, func() bool { return f.tag(repo, "v1").Phase == appsv1beta1.ImagePhaseSucceeded }, "written after the error")
}

func TestNodeImageDeletedCancelsAll(t *testing.T) {
	f := newFixture(t, gen.NodeImage(node, gen.AddNodeImageTags(repo, tagSpec("v1"))))
	f.images.set(img("v1"), &behaviour{gate: make(chan struct{})})
	f.start()
	f.waitPhase(repo, "v1", appsv1beta1.ImagePhasePulling)
	ni := f.nodeImage()
	require.NoError(t, f.niInf.Apps().V1beta1().NodeImages().Informer().GetIndexer().Delete(ni))
	f.p.nodeImageChanged(ni)
	f.waitFor(func() bool { return len(f.phases()) == 0 && f.inFlight() == 0 }, "all dropped")
}

func TestStatusPatch(t *testing.T) {
	written := &appsv1beta1.NodeImageStatus{Desired: 2, Succeeded: 2, ImageStatuses: map[string]appsv1beta1.ImageStatus{
		"a": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhaseSucceeded}}},
		"b": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhaseSucceeded}}},
	}, FirstSyncStatus: &appsv1beta1.SyncStatus{Status: appsv1beta1.SyncStatusSucceeded}}
	desired := written.DeepCopy()
	delete(desired.ImageStatuses, "b")
	desired.ImageStatuses["c"] = appsv1beta1.ImageStatus{Tags: []appsv1beta1.ImageTagStatus{{Tag: "1", Phase: appsv1beta1.ImagePhaseWaiting}}}
	desired.Succeeded, desired.Waiting = 1, 1
	patch, err := appsv1beta1.StatusMergePatch(written, desired)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":{"desired":2,"succeeded":1,"failed":0,"pulling":0,"waiting":1,
		"imageStatuses":{"b":null,"c":{"tags":[{"tag":"1","phase":"Waiting"}]}}}}`, string(patch))
}

func TestDefaultBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, DefaultBackoff(n))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}, got)
}

func TestNewRequiresFields(t *testing.T) {
	_, err := New(Config{})
	assert.Error(t, err)
}
