package imagepull

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/process/durations"
)

// Reasons of failures found before the runtime is asked.
const (
	reasonInvalidSecret  = "InvalidPullSecret"
	reasonSecretNotFound = "PullSecretNotFound"
	reasonDeadline       = "DeadlineExceeded"
)

// Event reasons.
const (
	EventPullSucceeded = "PullImageSucceeded"
	EventPullFailed    = "PullImageFailed"
)

var (
	// errAttemptTimeout ends an attempt that ran past timeoutSeconds.
	errAttemptTimeout = errors.New("pull attempt timed out")
	// errDeadline ends a tag whose activeDeadlineSeconds passed.
	errDeadline = errors.New("activeDeadlineSeconds exceeded")
)

// pullTag carries out one tag's request: the presence check for
// IfNotPresent, a slot of the node's limit, the attempts and their
// backoffs. It returns when the tag is finished or ctx ends (the tag was
// removed, its version changed, or the daemon stops: the state is then
// left alone).
func (p *Puller) pullTag(ctx context.Context, st *tagState, req request) {
	logger := klog.FromContext(ctx).WithValues("image", req.key.repo, "tag", req.key.tag, "version", req.version)
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	if req.deadline > 0 {
		left := req.since.Add(req.deadline).Sub(p.clock.Now())
		if left <= 0 {
			p.fail(ctx, st, req, time.Time{}, reasonDeadline,
				fmt.Sprintf("activeDeadlineSeconds (%d) passed before the pull started", int64(req.deadline/time.Second)))
			return
		}
		defer p.afterFunc(left, func() { cancel(errDeadline) })()
	}

	if !req.always {
		info, present, err := p.images.ImageStatus(ctx, req.image)
		switch {
		case err == nil && present:
			logger.V(2).Info("Image already present; not pulling", "imageID", info.ID)
			p.succeed(ctx, st, req, time.Time{}, info.ID, "image already present on the node")
			return
		case err != nil:
			if p.ended(ctx, st, req, time.Time{}, "") {
				return
			}
			_, msg := cri.DescribePullError(err)
			logger.Info("Could not tell whether the image is present; pulling it", "message", msg)
		}
	}

	if !p.acquire(ctx) {
		p.ended(ctx, st, req, time.Time{}, "")
		return
	}
	started := p.clock.Now()
	p.update(st, func(s *tagState) {
		s.phase = appsv1beta1.ImagePhasePulling
		s.start = p.now()
		s.message = ""
	})
	// attempt counts the attempts that reached the runtime; runtimeDown the
	// consecutive ones it did not answer (containerd restarting, say). Those
	// say nothing about the image, so they do not use up its retries: the
	// tag waits for the runtime, with backoff, until the pull's deadline or
	// cancellation ends it.
	attempt, runtimeDown := 1, 0
	for {
		id, reason, msg, permanent := p.attempt(ctx, req, attempt)
		p.release()
		if reason == "" {
			p.succeed(ctx, st, req, started, id, "")
			return
		}
		p.countFailure(ctx, reason, msg)
		if p.ended(ctx, st, req, started, msg) {
			return
		}
		var wait time.Duration
		if reason == cri.PullReasonUnavailable && !permanent {
			runtimeDown++
			wait = p.backoff(runtimeDown)
			logger.Info("Container runtime unavailable; pull waits for it", "attempt", attempt, "message", msg, "backoff", wait)
			p.update(st, func(s *tagState) {
				s.message = fmt.Sprintf("waiting for the container runtime: %s; retrying in %s", msg, wait)
			})
		} else {
			runtimeDown = 0
			if permanent || attempt > req.retries {
				p.fail(ctx, st, req, started, reason,
					fmt.Sprintf("failed to pull %s after %d attempt%s: %s: %s", req.image, attempt, plural(attempt), reason, msg))
				return
			}
			wait = p.backoff(attempt)
			logger.Info("Pull attempt failed; retrying", "attempt", attempt, "reason", reason, "message", msg, "backoff", wait)
			p.update(st, func(s *tagState) {
				s.message = fmt.Sprintf("attempt %d failed: %s: %s; retrying in %s", attempt, reason, msg, wait)
			})
			attempt++
		}
		if !p.sleep(ctx, wait) || !p.acquire(ctx) {
			p.ended(ctx, st, req, started, msg)
			return
		}
	}
}

// attempt makes one pull of the tag, trying each credential in order (or
// none), bounded by the tag's timeout. An empty reason means success;
// permanent failures are not retried.
func (p *Puller) attempt(ctx context.Context, req request, attempt int) (imageID, reason, message string, permanent bool) {
	logger := klog.FromContext(ctx).WithValues("attempt", attempt)
	refs, labels, annotations, ok := p.imageSpec(req.key.repo)
	if !ok {
		return "", cri.PullReasonCancelled, "the image is no longer in the NodeImage", true
	}
	secrets, problems, reason, message, permanent := p.readSecrets(refs)
	if reason != "" {
		return "", reason, message, permanent
	}
	creds, more := p.keyring.Lookup(ctx, req.image, secrets)
	problems = append(problems, more...)

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer p.afterFunc(req.timeout, func() { cancel(errAttemptTimeout) })()

	pr := cri.PullRequest{Image: req.image, SandboxLabels: labels, SandboxAnnotations: annotations}
	var err error
	if len(creds) == 0 {
		// No credential matches: pull anonymously, as the kubelet does.
		imageID, err = p.pullOnce(actx, logger, pr, "anonymous")
	}
	for _, c := range creds {
		auth := c.Auth
		pr.Auth = &auth
		imageID, err = p.pullOnce(actx, logger, pr, c.Source)
		if err == nil || actx.Err() != nil {
			break
		}
	}
	if err == nil {
		return imageID, "", "", false
	}
	if errors.Is(context.Cause(actx), errAttemptTimeout) && ctx.Err() == nil {
		reason, message = cri.PullReasonTimeout, fmt.Sprintf("pull attempt timed out after %s", req.timeout)
	} else {
		reason, message = cri.DescribePullError(err)
	}
	if len(problems) > 0 {
		message += "; credential problems: " + cri.Redact(joinErrors(problems))
	}
	if why := p.notRetried(reason, req.image, refs); why != "" {
		return "", reason, message + "; not retried: " + why, true
	}
	return "", reason, message, false
}

// countFailure counts a failed attempt by its class. One the tag's
// deadline cut short comes back cancelled, but it timed out.
func (p *Puller) countFailure(ctx context.Context, reason, message string) {
	class := failureClass(reason, message)
	if reason == cri.PullReasonCancelled && errors.Is(context.Cause(ctx), errDeadline) {
		class = failureTimeout
	}
	if class != "" {
		p.metrics.failures.WithLabelValues(class).Inc()
	}
}

// notRetried says why a failed attempt is final however many retries are
// left, or "" when another attempt may do better. The registry's NotFound
// will not change. Neither will its Unauthorized when no credentials
// could change: no pull secret is named (a named one may appear or be
// fixed) and no credential provider matches the image (its answer may
// differ next time), so the next attempt would be as anonymous as this one.
func (p *Puller) notRetried(reason, image string, refs []appsv1beta1.ReferenceObject) string {
	switch {
	case reason == cri.PullReasonNotFound:
		return "the registry does not have the image"
	case reason == cri.PullReasonUnauthorized && len(refs) == 0 && !p.keyring.HasProvider(image):
		return "the registry wants credentials and no pull secret or credential provider applies to the image"
	}
	return ""
}

// pullOnce is one PullImage call. source says where the credential came
// from; the credential itself is never logged.
func (p *Puller) pullOnce(ctx context.Context, logger klog.Logger, req cri.PullRequest, source string) (string, error) {
	logger.V(2).Info("Pulling image", "credentials", source)
	p.metrics.inFlight.Inc()
	defer p.metrics.inFlight.Dec()
	id, err := p.images.PullImage(ctx, req)
	if err != nil {
		// The runtime's text may quote a registry's answer or a signed
		// URL: the default log gets the cleaned message, a high verbosity
		// the whole error, redacted too.
		reason, msg := cri.DescribePullError(err)
		logger.V(2).Info("PullImage failed", "credentials", source, "reason", reason, "message", msg)
		logger.V(4).Info("PullImage error", "credentials", source, "err", cri.Redact(err.Error()))
	}
	return id, err
}

// readSecrets reads the pull secrets. One outside DaemonConfigNamespace is
// refused for good. A missing one is a credential problem, not a failure:
// the attempt goes ahead with the credentials there are, as the kubelet
// does with a pod's missing pull secret. An image's secrets are those of
// every job pulling it, so one job's missing secret must not fail a pull
// another job's credentials (or none) can make. When the pull fails, its
// message names the missing secret; the next attempt reads it again.
func (p *Puller) readSecrets(refs []appsv1beta1.ReferenceObject) (secrets []*corev1.Secret, problems []error, reason, message string, permanent bool) {
	for i := range refs {
		if refs[i].Namespace != appsv1beta1.DaemonConfigNamespace {
			return nil, nil, reasonInvalidSecret, fmt.Sprintf("pull secret %q is not in namespace %s: kruise-daemon only reads pull secrets from %s",
				refs[i].String(), appsv1beta1.DaemonConfigNamespace, appsv1beta1.DaemonConfigNamespace), true
		}
	}
	for i := range refs {
		s, err := p.secrets.Get(refs[i].Name)
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Errorf("%s: pull secret not found: %s", reasonSecretNotFound, refs[i].String()))
		case err != nil:
			problems = append(problems, fmt.Errorf("%s: pull secret not found: %s: %w", reasonSecretNotFound, refs[i].String(), err))
		default:
			secrets = append(secrets, s)
		}
	}
	return secrets, problems, "", "", false
}

// ended handles the end of ctx: past the active deadline the tag fails;
// otherwise it was cancelled and its state is left alone. It reports
// whether ctx has ended.
func (p *Puller) ended(ctx context.Context, st *tagState, req request, started time.Time, lastMessage string) bool {
	if ctx.Err() == nil {
		return false
	}
	if errors.Is(context.Cause(ctx), errDeadline) {
		msg := fmt.Sprintf("activeDeadlineSeconds (%d) exceeded", int64(req.deadline/time.Second))
		if lastMessage != "" {
			msg += "; last error: " + lastMessage
		}
		p.fail(ctx, st, req, started, reasonDeadline, msg)
		return true
	}
	klog.FromContext(ctx).V(2).Info("Pull cancelled")
	if !started.IsZero() {
		p.metrics.pulls.WithLabelValues(resultCancelled).Inc()
	}
	return true
}

func (p *Puller) succeed(ctx context.Context, st *tagState, req request, started time.Time, imageID, message string) {
	result := resultPresent
	if !started.IsZero() {
		result = resultSucceeded
		p.metrics.duration.WithLabelValues(resultSucceeded).Observe(p.clock.Since(started).Seconds())
	}
	p.metrics.pulls.WithLabelValues(result).Inc()
	if !p.update(st, func(s *tagState) {
		s.phase = appsv1beta1.ImagePhaseSucceeded
		s.end = p.now()
		s.imageID = imageID
		s.message = message
		s.cancel = nil
	}) {
		return
	}
	if result == resultSucceeded {
		klog.FromContext(ctx).Info("Pulled image", "imageID", imageID, "duration", p.clock.Since(started))
		p.event(corev1.EventTypeNormal, EventPullSucceeded, "Pulled image %s (version %d) in %s",
			req.image, req.version, p.clock.Since(started).Round(time.Millisecond))
	}
}

func (p *Puller) fail(ctx context.Context, st *tagState, req request, started time.Time, reason, message string) {
	if !started.IsZero() {
		p.metrics.duration.WithLabelValues(resultFailed).Observe(p.clock.Since(started).Seconds())
	}
	p.metrics.pulls.WithLabelValues(resultFailed).Inc()
	if !p.update(st, func(s *tagState) {
		s.phase = appsv1beta1.ImagePhaseFailed
		s.end = p.now()
		s.message = message
		s.cancel = nil
	}) {
		return
	}
	klog.FromContext(ctx).Info("Failed to pull image", "reason", reason, "message", message)
	p.event(corev1.EventTypeWarning, EventPullFailed, "Failed to pull image %s (version %d): %s", req.image, req.version, message)
}

// acquire takes a slot of the node's pull limit, or returns false when
// ctx ends first.
func (p *Puller) acquire(ctx context.Context) bool {
	select {
	case p.slots <- struct{}{}:
		if ctx.Err() != nil {
			p.release()
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Puller) release() { <-p.slots }

// sleep waits d on the clock, or returns false when ctx ends first.
func (p *Puller) sleep(ctx context.Context, d time.Duration) bool {
	return durations.Sleep(ctx, p.clock, d)
}

// afterFunc calls f after d on the clock unless the returned stop is
// called first.
func (p *Puller) afterFunc(d time.Duration, f func()) (stop func()) {
	t := p.clock.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			f()
		case <-done:
		}
	}()
	return func() {
		t.Stop()
		close(done)
	}
}

func joinErrors(errs []error) string {
	parts := make([]string, len(errs))
	for i, err := range errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
