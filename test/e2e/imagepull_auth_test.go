//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// An anonymous pull of a public image: the job completes, the image is on the node, and the
// runtime was asked without credentials.
func TestImagePullAnonymous(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-anon")
	image := e.freshImage(ctx, t, "public/", nil)
	since := time.Now()

	job := e.run(ctx, t, framework.NewImagePullJob(e.ns, "anonymous", image))
	e.requireSucceeded(ctx, t, job)
	if job.Status.CompletionTime == nil || job.Status.StartTime == nil {
		t.Errorf("finished job lacks startTime or completionTime: %+v", job.Status)
	}
	e.requirePresent(ctx, t, image)
	rec := onePullRecord(ctx, t, image, since)
	if rec.HasAuth {
		t.Errorf("anonymous pull of a public image was sent with credentials: %s", rec)
	}
}

// Pull secrets named in the job open basic/ and token/ repositories: the controller copies each
// into kruise-daemon-config while the job runs (the NodeImage names the copy) and deletes the copy
// once the job is finished.
func TestImagePullWithPullSecret(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-secret")
	cases := []struct {
		name   string
		prefix string
		creds  framework.Credentials
	}{
		{"basic", "basic/", framework.BasicCredentials()},
		{"token", "token/", framework.TokenCredentials()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A context of its own: a parallel subtest may wait long for a free slot.
			ctx := framework.Context(t, 4*time.Minute)
			image := e.freshImage(ctx, t, tc.prefix, &tc.creds)
			secret := "pull-" + tc.name
			e.f.CreatePullSecret(ctx, t, e.ns, secret, tc.creds)
			copyName := e.ns + "." + secret
			w := framework.WatchNodeImageTag(ctx, t, e.c, image)
			since := time.Now()

			job := framework.NewImagePullJob(e.ns, "with-"+tc.name, image)
			job.Spec.PullSecrets = []string{secret}
			job = e.run(ctx, t, job)
			e.requireSucceeded(ctx, t, job)
			e.requirePresent(ctx, t, image)
			if rec := onePullRecord(ctx, t, image, since); !rec.HasAuth {
				t.Errorf("pull of a %s image with a pull secret was sent without credentials: %s", tc.prefix, rec)
			}

			// The NodeImage asked the daemon to use the copy (the pull succeeding shows it existed).
			wantRef := appsv1beta1.ReferenceObject{Namespace: framework.DaemonConfigNamespace, Name: copyName}
			if _, ok := w.Find(framework.NodeName(), func(o framework.TagObservation) bool {
				return o.Spec != nil && slices.Contains(o.PullSecrets, wantRef)
			}); !ok {
				t.Errorf("NodeImage %s never named the pull secret copy %v for the image; observed: %s",
					framework.NodeName(), wantRef, w.Summary(framework.NodeName()))
			}
			// The copy exists exactly while an unfinished job references the secret.
			framework.WaitFor(ctx, t, time.Minute, "copy "+framework.DaemonConfigNamespace+"/"+copyName+" deleted after the job finished",
				func(ctx context.Context) (bool, string, error) {
					s, err := e.f.Client.CoreV1().Secrets(framework.DaemonConfigNamespace).Get(ctx, copyName, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, "gone", nil
					}
					if err != nil {
						return false, "", err
					}
					return false, fmt.Sprintf("still there: labels %v annotations %v", s.Labels, s.Annotations), nil
				})
		})
	}
}

// Without any pull secret, the kubelet credential provider plugins the daemon runs open
// basic/viaplugin/... and token/viaplugin/....
func TestImagePullViaCredentialProvider(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 5*time.Minute)
	e := newPullEnv(t, ctx, "pull-plugin")
	cases := []struct {
		name   string
		prefix string
		creds  framework.Credentials
	}{
		{"basic", "basic/viaplugin/", framework.BasicCredentials()},
		{"token", "token/viaplugin/", framework.TokenCredentials()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A context of its own: a parallel subtest may wait long for a free slot.
			ctx := framework.Context(t, 4*time.Minute)
			image := e.freshImage(ctx, t, tc.prefix, &tc.creds)
			since := time.Now()
			job := e.run(ctx, t, framework.NewImagePullJob(e.ns, "plugin-"+tc.name, image))
			e.requireSucceeded(ctx, t, job)
			e.requirePresent(ctx, t, image)
			if rec := onePullRecord(ctx, t, image, since); !rec.HasAuth {
				t.Errorf("pull through the credential provider was sent without credentials: %s", rec)
			}
			repo, _ := framework.SplitImage(image)
			if calls := framework.CredentialProviderCallsFor(t, repo); len(calls) == 0 {
				t.Errorf("the credential provider plugin's log %s has no call for %s", framework.CredentialProviderCalls, repo)
			}
		})
	}
}

// A pull secret with a wrong password makes the pull fail as Unauthorized, without retries.
func TestImagePullWrongCredentials(t *testing.T) {
	t.Parallel()
	ctx := framework.Context(t, 4*time.Minute)
	e := newPullEnv(t, ctx, "pull-wrong")
	image := e.freshImage(ctx, t, "basic/", ptr.To(framework.BasicCredentials()))
	wrong := framework.BasicCredentials()
	wrong.Password += "-wrong"
	e.f.CreatePullSecret(ctx, t, e.ns, "wrong", wrong)
	w := framework.WatchNodeImageTag(ctx, t, e.c, image)
	const auth = `kruise_daemon_image_pull_failures_total{reason="auth"}`
	failures := daemonSample(ctx, t, auth)

	job := framework.NewImagePullJob(e.ns, "wrong-password", image)
	job.Spec.PullSecrets = []string{"wrong"}
	job.Spec.PullPolicy = &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](30), BackoffLimit: ptr.To[int32](0)}
	job = e.run(ctx, t, job)
	e.requireFailed(ctx, t, job)
	requireFailedTag(t, w, "Unauthorized")
	requireDaemonCounted(ctx, t, auth, failures, 1)
	if _, present, _ := e.rt.ImageStatus(ctx, image); present {
		t.Errorf("image %s is on the node although its pull was refused", image)
	}
}
