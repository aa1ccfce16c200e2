//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const ejobLabel = "ejob-e2e"

// ejobTargets creates n running busybox pods labelled for the jobs, named p0, p1, ... in order.
func ejobTargets(ctx context.Context, t *testing.T, f *framework.Framework, ns string, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		p := f.BusyboxPod(ns, fmt.Sprintf("p%d", i), "main")
		p.Labels = map[string]string{"app": ejobLabel}
		pods = append(pods, f.CreateRunningPod(ctx, t, p))
	}
	return pods
}

// newEJob is a job whose one container ("debugger", busybox) runs script on the labelled pods.
func newEJob(f *framework.Framework, ns, name, script string) *appsv1alpha1.EphemeralJob {
	return &appsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.EphemeralJobSpec{
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": ejobLabel}},
			Parallelism: ptr.To[int32](3),
			Template: appsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				TargetContainerName: "main",
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: f.Image("public/busybox:1.35"),
					Command: []string{"sh", "-c", script}, ImagePullPolicy: corev1.PullIfNotPresent,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			}}},
		},
	}
}

func createEJob(ctx context.Context, t *testing.T, kc versioned.Interface, job *appsv1alpha1.EphemeralJob) *appsv1alpha1.EphemeralJob {
	t.Helper()
	got, err := kc.AppsV1alpha1().EphemeralJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating EphemeralJob %s: %v", job.Name, err)
	}
	return got
}

func describeEJob(j *appsv1alpha1.EphemeralJob) string {
	var conds []string
	for _, c := range j.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("phase %q match %d succeeded %d failed %d running %d waiting %d; %s", j.Status.Phase, j.Status.Matches,
		j.Status.Succeeded, j.Status.Failed, j.Status.Running, j.Status.Waiting, strings.Join(conds, "; "))
}

// waitEJob waits until cond holds of the job.
func waitEJob(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, timeout time.Duration, desc string,
	cond func(*appsv1alpha1.EphemeralJob) bool) *appsv1alpha1.EphemeralJob {
	t.Helper()
	var got *appsv1alpha1.EphemeralJob
	framework.WaitFor(ctx, t, timeout, "EphemeralJob "+name+" "+desc, func(ctx context.Context) (bool, string, error) {
		j, err := kc.AppsV1alpha1().EphemeralJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = j
		return cond(j), describeEJob(j), nil
	})
	return got
}

// ownedEphemeral is the debugger container the job added to pod, nil when none.
func ownedEphemeral(pod *corev1.Pod, job *appsv1alpha1.EphemeralJob) *corev1.EphemeralContainer {
	for i := range pod.Spec.EphemeralContainers {
		for _, e := range pod.Spec.EphemeralContainers[i].Env {
			if e.Name == appsv1alpha1.EphemeralContainerEnvKey && e.Value == string(job.UID) {
				return &pod.Spec.EphemeralContainers[i]
			}
		}
	}
	return nil
}

func ephemeralStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.EphemeralContainerStatuses {
		if pod.Status.EphemeralContainerStatuses[i].Name == name {
			return &pod.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

// A job adds its container, marked with its uid, to every matched pod; the containers run to
// exit 0 on the node and the job succeeds with the counts; its requester is the user who created
// it, whatever annotation was written; it keeps its finalizer until deleted.
func TestEphemeralJobSucceeds(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-ok")
	ejobTargets(ctx, t, f, ns, 3)
	job := newEJob(f, ns, "ok", "echo debugged")
	job.Annotations = map[string]string{ejobaccess.RequesterAnnotation: `{"username":"forged","groups":["system:masters"]}`}
	job = createEJob(ctx, t, kc, job)
	r, err := ejobaccess.FromAnnotations(job.Annotations)
	if err != nil || r.Username == "forged" {
		t.Fatalf("requester %+v (%v): the webhook must overwrite the forged one", r, err)
	}
	done := waitEJob(ctx, t, kc, ns, "ok", 3*time.Minute, "succeeded", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobSucceeded
	})
	if done.Status.Matches != 3 || done.Status.Succeeded != 3 || done.Status.Failed != 0 || done.Status.CompletionTime == nil {
		t.Fatalf("finished as %s; want 3 matched, 3 succeeded, a completion time", describeEJob(done))
	}
	if len(done.Finalizers) != 1 || done.Finalizers[0] != "apps.kruise.io/ephemeralcontainers-cleanup" {
		t.Errorf("finalizers %v", done.Finalizers)
	}
	for i := range 3 {
		pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("p%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := ephemeralStatus(pod, "debugger")
		if ownedEphemeral(pod, done) == nil || st == nil || st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
			t.Errorf("pod %s: want the job's container, exited 0; got %+v", pod.Name, st)
		}
	}
}

// A container that exits non-zero fails its pod, and the job once every pod failed.
func TestEphemeralJobFails(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-fail")
	ejobTargets(ctx, t, f, ns, 2)
	createEJob(ctx, t, kc, newEJob(f, ns, "fail", "exit 3"))
	done := waitEJob(ctx, t, kc, ns, "fail", 3*time.Minute, "failed", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobFailed
	})
	if done.Status.Failed != 2 || done.Status.Succeeded != 0 || done.Status.CompletionTime == nil {
		t.Fatalf("finished as %s; want 2 failed", describeEJob(done))
	}
}

// replicas caps the pods (the oldest), parallelism 1 runs them one after the other: the second
// pod's container starts only after the first one's finished.
func TestEphemeralJobReplicasAndParallelism(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-par")
	ejobTargets(ctx, t, f, ns, 3)
	job := newEJob(f, ns, "par", "sleep 2")
	job.Spec.Replicas, job.Spec.Parallelism = ptr.To[int32](2), ptr.To[int32](1)
	job = createEJob(ctx, t, kc, job)
	done := waitEJob(ctx, t, kc, ns, "par", 3*time.Minute, "succeeded", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobSucceeded
	})
	if done.Status.Matches != 2 || done.Status.Succeeded != 2 {
		t.Fatalf("finished as %s; want 2 matched and succeeded", describeEJob(done))
	}
	var sts []*corev1.ContainerStatus
	for i := range 3 {
		pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("p%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if ownedEphemeral(pod, job) != nil {
				t.Fatalf("pod p2, the youngest, got the container beyond replicas 2")
			}
			continue
		}
		st := ephemeralStatus(pod, "debugger")
		if st == nil || st.State.Terminated == nil {
			t.Fatalf("pod %s: container not finished: %+v", pod.Name, st)
		}
		sts = append(sts, st)
	}
	first, second := sts[0].State.Terminated, sts[1].State.Terminated
	if first.StartedAt.After(second.StartedAt.Time) {
		first, second = second, first
	}
	if second.StartedAt.Before(&first.FinishedAt) {
		t.Fatalf("parallelism 1, yet one container started at %s before the other finished at %s", second.StartedAt, first.FinishedAt)
	}
}

// A paused job adds nothing; resumed, it runs.
func TestEphemeralJobPaused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-pause")
	ejobTargets(ctx, t, f, ns, 1)
	job := newEJob(f, ns, "paused", "true")
	job.Spec.Paused = true
	job = createEJob(ctx, t, kc, job)
	waitEJob(ctx, t, kc, ns, "paused", time.Minute, "paused", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobPause && j.Status.Matches == 1
	})
	pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, "p0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.EphemeralContainers) != 0 {
		t.Fatalf("a paused job added containers: %v", pod.Spec.EphemeralContainers)
	}
	patch := []byte(`{"spec":{"paused":false}}`)
	if _, err := kc.AppsV1alpha1().EphemeralJobs(ns).Patch(ctx, "paused", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEJob(ctx, t, kc, ns, "paused", 3*time.Minute, "succeeded once resumed", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobSucceeded && j.Status.Succeeded == 1
	})
}

// A job still running at activeDeadlineSeconds fails with DeadlineExceeded.
func TestEphemeralJobDeadline(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-deadline")
	ejobTargets(ctx, t, f, ns, 1)
	job := newEJob(f, ns, "deadline", "sleep 3600")
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
	createEJob(ctx, t, kc, job)
	done := waitEJob(ctx, t, kc, ns, "deadline", 2*time.Minute, "failed at its deadline", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobFailed
	})
	var reason string
	for _, c := range done.Status.Conditions {
		if c.Type == appsv1alpha1.EJobFailed {
			reason = c.Reason
		}
	}
	if reason != "DeadlineExceeded" || done.Status.Running != 1 {
		t.Fatalf("failed as %s; want DeadlineExceeded with the container still running", describeEJob(done))
	}
	if d := done.Status.CompletionTime.Sub(done.Status.StartTime.Time); d < 10*time.Second || d > 20*time.Second {
		t.Errorf("completed %s after it started; want at its 10 s deadline", d)
	}
}

// A finished job is deleted ttlSecondsAfterFinished after it finished.
func TestEphemeralJobTTL(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-ttl")
	ejobTargets(ctx, t, f, ns, 1)
	job := newEJob(f, ns, "ttl", "true")
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
	createEJob(ctx, t, kc, job)
	done := waitEJob(ctx, t, kc, ns, "ttl", 3*time.Minute, "succeeded", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.CompletionTime != nil
	})
	framework.WaitFor(ctx, t, time.Minute, "EphemeralJob ttl deleted", func(ctx context.Context) (bool, string, error) {
		_, err := kc.AppsV1alpha1().EphemeralJobs(ns).Get(ctx, "ttl", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "deleted", nil
		}
		return false, "still there", err
	})
	if gone := time.Since(done.Status.CompletionTime.Time); gone < 3*time.Second {
		t.Errorf("deleted %s after it finished, before its TTL of 3 s", gone)
	}
	pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, "p0", metav1.GetOptions{})
	if err != nil || len(pod.Spec.EphemeralContainers) != 1 {
		t.Errorf("the pod keeps its ephemeral container (they cannot be removed): %v %v", err, pod.Spec.EphemeralContainers)
	}
}

// ejobUser is a kruise client and a kube client acting as user, bound in ns to a Role of rules
// (and always allowed to create and read EphemeralJobs).
func ejobUser(ctx context.Context, t *testing.T, f *framework.Framework, ns, user string, rules ...rbacv1.PolicyRule) versioned.Interface {
	t.Helper()
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"ephemeraljobs"},
		Verbs: []string{"create", "get", "list", "update", "patch"}})
	if _, err := f.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC reaches the authorizer through its informers: wait until every rule is in force, so
	// that neither the create nor kruise's questions meet a binding not yet seen.
	for _, r := range rules {
		resource, sub, _ := strings.Cut(r.Resources[0], "/")
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, name := range names {
			attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: resource, Subresource: sub, Name: name}
			framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("%s allowed to %s %s/%s %s", user, attrs.Verb, resource, sub, name),
				func(ctx context.Context) (bool, string, error) {
					res, err := f.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
						Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: attrs}}, metav1.CreateOptions{})
					if err != nil {
						return false, "", err
					}
					return res.Status.Allowed, res.Status.Reason, nil
				})
		}
	}
	kc, err := versioned.NewForConfig(impersonated(f, user))
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

var execRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}}
var ecRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}, Verbs: []string{"patch"}}

// A user who may create EphemeralJobs but not exec into the namespace's pods is refused at
// admission, told what is missing; with exec but not pods/ephemeralcontainers, likewise.
func TestEphemeralJobRequesterWithoutExecIsRefused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-noexec")
	ejobTargets(ctx, t, f, ns, 1)
	for user, rules := range map[string][]rbacv1.PolicyRule{"ejob-noexec": {ecRule}, "ejob-noec": {execRule}} {
		kc := ejobUser(ctx, t, f, ns, user, rules...)
		_, err := kc.AppsV1alpha1().EphemeralJobs(ns).Create(ctx, newEJob(f, ns, user, "true"), metav1.CreateOptions{})
		if err == nil {
			t.Fatalf("%s: created; want refused", user)
		}
		for _, want := range []string{`admission webhook "vephemeraljob.kb.io" denied the request`, `user "` + user + `" may not create pods/exec and patch pods/ephemeralcontainers in namespace "` + ns + `"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: refused with %q; want %q", user, err, want)
			}
		}
	}
}

// A user whose rights name some pods only (resourceNames) has the containers added to those
// pods only; the others count as failed, with an Event saying why. A requester annotation the
// user forges, at create or in an update, is overwritten with the user.
func TestEphemeralJobActsOnlyOnPodsTheRequesterMayReach(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-some")
	ejobTargets(ctx, t, f, ns, 2)
	onP1 := func(r rbacv1.PolicyRule) rbacv1.PolicyRule { r.ResourceNames = []string{"p1"}; return r }
	kc := ejobUser(ctx, t, f, ns, "ejob-p1", onP1(execRule), onP1(ecRule))
	job := newEJob(f, ns, "some", "true")
	job.Annotations = map[string]string{ejobaccess.RequesterAnnotation: `{"username":"kubernetes-admin","groups":["system:masters"]}`}
	job = createEJob(ctx, t, kc, job)
	if r, err := ejobaccess.FromAnnotations(job.Annotations); err != nil || r.Username != "ejob-p1" {
		t.Fatalf("requester %+v (%v); want ejob-p1, the forged one overwritten", r, err)
	}
	done := waitEJob(ctx, t, kc, ns, "some", 3*time.Minute, "finished", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.CompletionTime != nil
	})
	if done.Status.Succeeded != 1 || done.Status.Failed != 1 || done.Status.Phase != appsv1alpha1.EphemeralJobFailed {
		t.Fatalf("finished as %s; want p1 succeeded, p0 refused (failed)", describeEJob(done))
	}
	for name, want := range map[string]bool{"p0": false, "p1": true} {
		pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ownedEphemeral(pod, done) != nil; got != want {
			t.Errorf("pod %s has the job's container: %v, want %v", name, got, want)
		}
	}
	f.WaitObjectEvent(ctx, t, ns, "EphemeralJob", "some", "RequesterForbidden", time.Minute, `User "ejob-p1" may not reach pod p0`)

	// An update of the annotation alone is stamped again.
	patch := []byte(`{"metadata":{"annotations":{"` + ejobaccess.RequesterAnnotation + `":"{\"username\":\"kubernetes-admin\"}"}}}`)
	upd, err := kc.AppsV1alpha1().EphemeralJobs(ns).Patch(ctx, "some", "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ejobaccess.FromAnnotations(upd.Annotations); err != nil || r.Username != "ejob-p1" {
		t.Fatalf("after the update the requester is %+v (%v); want ejob-p1", r, err)
	}
}

// docs/examples/ephemeraljob-debug.yaml as written: its Deployment's three pods each get the
// debugger, which prints the app's processes, and the job succeeds.
func TestEphemeralJobExample(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ejob-example")
	var job *appsv1alpha1.EphemeralJob
	for _, obj := range exampleObjects(t, "../../docs/examples/ephemeraljob-debug.yaml") {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			o.Namespace = ns
			if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case *appsv1alpha1.EphemeralJob:
			job = o
		}
	}
	if job == nil {
		t.Fatal("docs/examples/ephemeraljob-debug.yaml has no EphemeralJob")
	}
	framework.WaitFor(ctx, t, 2*time.Minute, "the Deployment's 3 pods running", func(ctx context.Context) (bool, string, error) {
		d, err := f.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return d.Status.ReadyReplicas == 3, fmt.Sprintf("%d ready", d.Status.ReadyReplicas), nil
	})
	job.Namespace = ns
	createEJob(ctx, t, kc, job)
	done := waitEJob(ctx, t, kc, ns, job.Name, 3*time.Minute, "succeeded", func(j *appsv1alpha1.EphemeralJob) bool {
		return j.Status.Phase == appsv1alpha1.EphemeralJobSucceeded
	})
	if done.Status.Succeeded != 3 {
		t.Fatalf("finished as %s; want 3 succeeded", describeEJob(done))
	}
}
