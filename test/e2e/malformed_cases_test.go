//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// ---- the table ----

// podPreStop is a row whose pod, of its own, has a preStop hook the daemon cannot run as written:
// the hook fails (an Event with reason and message) and the container is recreated anyway.
func podPreStop(name string, preStop *corev1.LifecycleHandler, reason, message string) malCase {
	return malCase{name: "crr/" + name, write: func(ctx context.Context, t *testing.T, e *malEnv) error {
		e.ownPod(ctx, t, name, func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: preStop} })
		_, err := e.createMap(ctx, t, gvrCRR, malCRR(e, name, name, "main"))
		return err
	}, expect: both(crrEvent(name, reason, message), crrCompleted(name, "recreated 1 container", true, ""))}
}

// readOnly is what the API server answers a CRR whose creator wrote what kruise fills in at
// admission (the CRR mutating webhook, which the e2e installs serve; with webhook.enabled=false the
// ValidatingAdmissionPolicy kruise-crr-read-only-fields refuses it instead).
var readOnly = []string{`admission webhook "mcontainerrecreaterequest.kb.io" denied the request`, "preStop, ports and statusContext are read-only"}

func malCases() []malCase {
	const huge = int64(9999999999) // more than an int32 holds
	over := fmt.Sprintf("less than or equal to %d", math.MaxInt32)
	crr := func(name, pod string, containers ...string) func(e *malEnv) runtime.Object {
		return func(e *malEnv) runtime.Object { return malCRR(e, name, pod, containers...) }
	}
	crrOn := func(name string, pod func(e *malEnv) string, containers ...string) func(e *malEnv) runtime.Object {
		return func(e *malEnv) runtime.Object { return malCRR(e, name, pod(e), containers...) }
	}
	// crrEnding is admitted (its pod exists, but never starts) and completed by its deadline
	// (3 s) with nothing recreated: a completed request to update.
	crrEnding := func(name string) func(e *malEnv) runtime.Object {
		return func(e *malEnv) runtime.Object {
			c := malCRR(e, name, e.unscheduled, "main")
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
			return c
		}
	}
	pullJob := func(name, image string) func(e *malEnv) runtime.Object {
		return func(e *malEnv) runtime.Object { return malPullJob(e, name, image) }
	}
	// freshPullJob pushes a new image of its own, so that no other job shares its NodeImage tag.
	freshPullJob := func(t *testing.T, e *malEnv, name string) *appsv1beta1.ImagePullJob {
		image := e.f.UniqueImage("public/")
		framework.PushImage(t, image, nil)
		return malPullJob(e, name, image)
	}
	mark := func(v string) corev1.EnvVar { return corev1.EnvVar{Name: framework.EnvTerminateSidecar, Value: v} }
	repo := func(name string) string { return "127.0.0.1:5000/e2e-malformed/" + name + "-" + rand.String(5) }
	tag := func(tag string) map[string]any {
		return map[string]any{"tag": tag, "pullPolicy": map[string]any{"backoffLimit": int64(0), "timeoutSeconds": int64(30)}}
	}

	cases := []malCase{
		// ---- ContainerRecreateRequest: refused by the API server ----
		{name: "crr/no-podName", write: create(gvrCRR, crr("no-pod-name", "", "main")),
			reject: []string{"spec.podName", "at least 1 chars long"}},
		{name: "crr/containers-missing", write: create(gvrCRR, crr("no-containers", "web"), func(m map[string]any) {
			unstructured.RemoveNestedField(m, "spec", "containers")
		}), reject: []string{"spec.containers: Required value"}},
		{name: "crr/containers-empty", write: create(gvrCRR, crr("empty-containers", "web"), setList("spec.containers")),
			reject: []string{"spec.containers", "should have at least 1 items"}},
		{name: "crr/container-name-empty", write: create(gvrCRR, crr("empty-name", "web", "")),
			reject: []string{"spec.containers[0].name", "at least 1 chars long"}},
		{name: "crr/duplicate-container", write: create(gvrCRR, crr("dup", "web", "main", "main")),
			reject: []string{"spec.containers[1]", "Duplicate value"}},
		{name: "crr/failurePolicy-unknown", write: create(gvrCRR, crr("bad-policy", "web", "main"), set("spec.strategy.failurePolicy", "Retry")),
			reject: []string{"spec.strategy.failurePolicy", `Unsupported value: "Retry"`}},
		{name: "crr/failurePolicy-lowercase", write: create(gvrCRR, crr("lower-policy", "web", "main"), set("spec.strategy.failurePolicy", "fail")),
			reject: []string{"spec.strategy.failurePolicy", `Unsupported value: "fail"`}},
		{name: "crr/orderedRecreate-string", write: create(gvrCRR, crr("ordered-string", "web", "main"), set("spec.strategy.orderedRecreate", "yes")),
			reject: []string{"spec.strategy.orderedRecreate", "must be of type boolean"}},
		{name: "crr/terminationGracePeriodSeconds-negative", write: create(gvrCRR, crr("neg-grace", "web", "main"), set("spec.strategy.terminationGracePeriodSeconds", int64(-1))),
			reject: []string{"spec.strategy.terminationGracePeriodSeconds", "greater than or equal to 0"}},
		// Larger than an int32: stored, it would make every list of CRRs undecodable.
		{name: "crr/minStartedSeconds-over-int32", write: create(gvrCRR, crr("huge-min-started", "web", "main"), set("spec.strategy.minStartedSeconds", huge)),
			reject: []string{"spec.strategy.minStartedSeconds", over}},
		{name: "crr/unreadyGracePeriodSeconds-negative", write: create(gvrCRR, crr("neg-unready", "web", "main"), set("spec.strategy.unreadyGracePeriodSeconds", int64(-5))),
			reject: []string{"spec.strategy.unreadyGracePeriodSeconds", "greater than or equal to 0"}},
		{name: "crr/activeDeadlineSeconds-negative", write: create(gvrCRR, crr("neg-deadline", "web", "main"), set("spec.activeDeadlineSeconds", int64(-1))),
			reject: []string{"spec.activeDeadlineSeconds", "greater than or equal to 3"}},
		{name: "crr/activeDeadlineSeconds-zero", write: create(gvrCRR, crr("zero-deadline", "web", "main"), set("spec.activeDeadlineSeconds", int64(0))),
			reject: []string{"spec.activeDeadlineSeconds", "greater than or equal to 3"}},
		{name: "crr/activeDeadlineSeconds-over-int64", write: create(gvrCRR, crr("float-deadline", "web", "main"), set("spec.activeDeadlineSeconds", 1e20)),
			reject: []string{"spec.activeDeadlineSeconds", "must be of type integer"}},
		{name: "crr/ttlSecondsAfterFinished-over-int32", write: create(gvrCRR, crr("huge-ttl", "web", "main"), set("spec.ttlSecondsAfterFinished", huge)),
			reject: []string{"spec.ttlSecondsAfterFinished", over}},
		{name: "crr/statusContext-restartCount-over-int32", write: create(gvrCRR, crr("huge-restart-count", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "statusContext": map[string]any{"containerID": "containerd://x", "restartCount": huge}})),
			reject: []string{"spec.containers[0].statusContext.restartCount", over}},
		{name: "crr/ports-over-int32", write: create(gvrCRR, crr("huge-port", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "ports": []any{map[string]any{"containerPort": huge}}})),
			reject: []string{"spec.containers[0].ports", "containerPort and hostPort must be 32-bit integers"}},
		{name: "crr/preStop-httpGet-port-over-int32", write: create(gvrCRR, crr("huge-hook-port", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "preStop": map[string]any{"httpGet": map[string]any{"port": huge}}})),
			reject: []string{"spec.containers[0].preStop", "httpGet.port must be a 32-bit integer"}},
		{name: "crr/update-podName", write: createThenUpdate(gvrCRR, crrEnding("move"), completedCRRMap, false, set("spec.podName", "other")),
			reject: []string{"spec.podName is immutable"}},
		{name: "crr/update-containers", write: createThenUpdate(gvrCRR, crrEnding("add-container"), completedCRRMap, false,
			setList("spec.containers", map[string]any{"name": "main"}, map[string]any{"name": "ghost"})),
			reject: []string{"cannot be added, removed or reordered"}},
		{name: "crr/update-strategy", write: createThenUpdate(gvrCRR, crrEnding("restrategy"), completedCRRMap, false, set("spec.strategy.failurePolicy", "Ignore")),
			reject: []string{"spec.strategy is immutable"}},
		{name: "crr/reopen-completed", write: createThenUpdate(gvrCRR, crrEnding("reopen"), completedCRRMap, true, set("status.phase", "Pending")),
			reject: []string{"a Completed ContainerRecreateRequest cannot change phase"}},

		// ---- ContainerRecreateRequest: refused by kruise's validating webhook ----
		// (kruise-controller completes them as Failed with the same words where the webhook is not
		// called: failurePolicy Ignore during an outage, an install without webhooks.)
		{name: "crr/pod-missing", write: create(gvrCRR, crr("pod-missing", "nope", "main")),
			reject: []string{`admission webhook "vcontainerrecreaterequest.kb.io" denied the request`, `spec.podName: Invalid value: "nope": pod "nope" not found`}},
		{name: "crr/pod-name-invalid", write: create(gvrCRR, crr("pod-name-invalid", "Not A Pod Name", "main")),
			reject: []string{"vcontainerrecreaterequest.kb.io", `pod "Not A Pod Name" not found`}},
		{name: "crr/container-unknown", write: create(gvrCRR, crr("container-unknown", "web", "ghost")),
			reject: []string{"vcontainerrecreaterequest.kb.io", `spec.containers[0].name: Invalid value: "ghost": container "ghost" not found in pod "web"`}},

		// ---- ContainerRecreateRequest: accepted, then completed by kruise with the reason ----
		// A statusContext is kruise's to fill in; one naming no instance the container has had
		// would otherwise count as already recreated, and "succeed" with nothing done.
		{name: "crr/statusContext-foreign", write: create(gvrCRR, crr("foreign-context", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "statusContext": map[string]any{"containerID": "containerd://garbage", "restartCount": int64(1000)}})),
			reject: readOnly},
		// A hook of the creator's would run a command of their choosing in the container (with
		// its service-account token) or send a request from the node: refused.
		{name: "crr/preStop-of-the-creator", write: create(gvrCRR, crr("own-hook", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "preStop": map[string]any{"exec": map[string]any{"command": []any{"cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}})),
			reject: readOnly},
		{name: "crr/preStop-httpGet-of-the-creator", write: create(gvrCRR, crr("own-http-hook", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "preStop": map[string]any{"httpGet": map[string]any{"host": "10.0.0.1", "port": int64(6443), "path": "/"}}})),
			reject: readOnly},
		// Even written as empty lists (which OpenKruise's admission refuses too).
		{name: "crr/ports-empty-list", write: create(gvrCRR, crr("ports-empty", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "ports": []any{}})), reject: readOnly},
		{name: "crr/prestop-exec-command-empty-list", write: create(gvrCRR, crr("empty-command", "web", "main"),
			setList("spec.containers", map[string]any{"name": "main", "preStop": map[string]any{"exec": map[string]any{"command": []any{}}}})),
			reject: readOnly},
		// A request whose pod is still being scheduled or started waits for it.
		{name: "crr/pod-not-scheduled", write: create(gvrCRR, crrOn("not-scheduled", func(e *malEnv) string { return e.unscheduled }, "main")),
			expect: crrWaiting("not-scheduled", `waiting for the pod to start: pod "unscheduled" is not scheduled to a node yet`)},
		{name: "crr/pod-on-other-node-not-running", write: create(gvrCRR, crrOn("not-running", func(e *malEnv) string { return e.vkPending }, "main")),
			expect: crrWaiting("not-running", `waiting for the pod to start: pod "pending-on-vk-node" is not running yet (phase "Pending")`)},
		{name: "crr/pod-on-node-without-daemon", write: create(gvrCRR, crrOn("no-daemon", func(e *malEnv) string { return e.vkPod }, "main")),
			expect: func(ctx context.Context, e *malEnv) (bool, string, error) {
				return crrCompleted("no-daemon", fmt.Sprintf("no live kruise-daemon on node %q", e.vkNode), false, "NoLiveDaemon")(ctx, e)
			}, timeout: malNoDaemonWait},
		// Routing labels set by the creator are not trusted: the controller admits the request
		// and writes the real ones.
		{name: "crr/garbage-pod-uid-label", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "garbage-uid")
			c := malCRR(e, "garbage-uid", "garbage-uid", "main")
			c.Labels = map[string]string{appsv1alpha1.ContainerRecreateRequestPodUIDKey: "garbage", appsv1alpha1.ContainerRecreateRequestNodeNameKey: "nowhere"}
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: both(crrCompleted("garbage-uid", "recreated 1 container", true, ""), func(ctx context.Context, e *malEnv) (bool, string, error) {
			crr, err := e.kc.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "garbage-uid", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			pod, err := e.f.Client.CoreV1().Pods(e.ns).Get(ctx, "garbage-uid", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if got := crr.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey]; got != string(pod.UID) {
				return false, "", fmt.Errorf("pod-uid label %q, want the pod's UID %s", got, pod.UID)
			}
			return true, "", nil
		})},
		// The unready-acquired annotation is the controller's to write: garbage from the creator
		// is overwritten when the pod declares the readiness gate, and ignored when it does not.
		{name: "crr/garbage-unready-annotation-with-gate", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "unready-gate", func(p *corev1.Pod) {
				p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}}
			})
			c := malCRR(e, "unready-gate", "unready-gate", "main")
			c.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "not-a-time"}
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](1)}
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: both(crrCompleted("unready-gate", "recreated 1 container", true, ""), func(ctx context.Context, e *malEnv) (bool, string, error) {
			crr, err := e.kc.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "unready-gate", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			v := crr.Annotations[appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				return false, "", fmt.Errorf("annotation %s is %q, want the time the controller marked the pod not-ready", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey, v)
			}
			return true, "", nil
		})},
		{name: "crr/huge-unreadyGracePeriodSeconds-without-gate", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "unready-nogate")
			c := malCRR(e, "unready-nogate", "unready-nogate", "main")
			c.Annotations = map[string]string{appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "not-a-time"}
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](math.MaxInt64)}
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: both(crrEvent("unready-nogate", "UnreadyGateMissing", "does not declare readiness gate"),
			crrCompleted("unready-nogate", "recreated 1 container", true, ""))},
		{name: "crr/huge-terminationGracePeriodSeconds", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "huge-grace")
			c := malCRR(e, "huge-grace", "huge-grace", "main")
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{TerminationGracePeriodSeconds: ptr.To[int64](math.MaxInt64)}
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: crrCompleted("huge-grace", "recreated 1 container", true, "")},
		// Values below the range OpenKruise admits too (it bounds neither): a negative
		// minStartedSeconds is read as 0, a negative ttl deletes the request at once.
		{name: "crr/minStartedSeconds-negative", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "neg-min-started")
			c := malCRR(e, "neg-min-started", "neg-min-started", "main")
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: -1}
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: crrCompleted("neg-min-started", "recreated 1 container", true, "")},
		{name: "crr/ttlSecondsAfterFinished-negative", write: create(gvrCRR, crrEnding("neg-ttl"), set("spec.ttlSecondsAfterFinished", int64(-1))),
			expect: func(ctx context.Context, e *malEnv) (bool, string, error) {
				crr, err := e.kc.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, "neg-ttl", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil // completed (at its deadline), then deleted at once
				}
				if err != nil {
					return false, "", err
				}
				return false, fmt.Sprintf("phase=%q message=%q", crr.Status.Phase, crr.Status.Message), nil
			}},
		// The pod's own preStop hook, as the daemon runs it, that cannot run as written: reported,
		// and the container recreated anyway.
		podPreStop("prestop-port-name-unknown", &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("no-such-port")}},
			"PreStopFailed", `port "no-such-port" is not among the container's ports`),
		podPreStop("prestop-tcp", &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
			"PreStopNotSupported", "tcpSocket preStop hooks are not run"),
		// The largest minStartedSeconds would keep the request open for decades: its deadline
		// ends it.
		{name: "crr/max-minStartedSeconds-with-deadline", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			e.ownPod(ctx, t, "max-min-started")
			c := malCRR(e, "max-min-started", "max-min-started", "main")
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{MinStartedSeconds: math.MaxInt32}
			c.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
			c.Spec.TTLSecondsAfterFinished = ptr.To[int32](math.MaxInt32)
			_, err := e.createMap(ctx, t, gvrCRR, c)
			return err
		}, expect: crrCompleted("max-min-started", "exceeded activeDeadlineSeconds (5s)", false, "DeadlineExceeded")},

		// ---- ImagePullJob: refused by the API server ----
		{name: "pulljob/image-empty", write: create(gvrPullJob, pullJob("image-empty", "")),
			reject: []string{"spec.image", "at least 1 chars long"}},
		{name: "pulljob/parallelism-abc", write: create(gvrPullJob, pullJob("par-abc", "busybox"), set("spec.parallelism", "abc")),
			reject: []string{"spec.parallelism", "parallelism must be a non-negative integer"}},
		{name: "pulljob/parallelism-minus-one-string", write: create(gvrPullJob, pullJob("par-neg-str", "busybox"), set("spec.parallelism", "-1")),
			reject: []string{"spec.parallelism", "parallelism must be a non-negative integer"}},
		{name: "pulljob/parallelism-minus-one", write: create(gvrPullJob, pullJob("par-neg", "busybox"), set("spec.parallelism", int64(-1))),
			reject: []string{"spec.parallelism", "parallelism must be a non-negative integer"}},
		{name: "pulljob/parallelism-percent", write: create(gvrPullJob, pullJob("par-pct", "busybox"), set("spec.parallelism", "150%")),
			reject: []string{"spec.parallelism", "parallelism must be a non-negative integer"}},
		{name: "pulljob/parallelism-over-int32", write: create(gvrPullJob, pullJob("par-huge", "busybox"), set("spec.parallelism", huge)),
			reject: []string{"spec.parallelism", "parallelism must be a non-negative integer"}},
		{name: "pulljob/backoffLimit-over-int32", write: create(gvrPullJob, pullJob("backoff-huge", "busybox"), set("spec.pullPolicy.backoffLimit", huge)),
			reject: []string{"spec.pullPolicy.backoffLimit", over}},
		{name: "pulljob/timeoutSeconds-over-int32", write: create(gvrPullJob, pullJob("timeout-huge", "busybox"), set("spec.pullPolicy.timeoutSeconds", huge)),
			reject: []string{"spec.pullPolicy.timeoutSeconds", over}},
		{name: "pulljob/ttlSecondsAfterFinished-over-int32", write: create(gvrPullJob, pullJob("ttl-huge", "busybox"), set("spec.completionPolicy.ttlSecondsAfterFinished", huge)),
			reject: []string{"spec.completionPolicy.ttlSecondsAfterFinished", over}},
		{name: "pulljob/activeDeadlineSeconds-below-timeout", write: create(gvrPullJob, pullJob("deadline-short", "busybox"), set("spec.completionPolicy.activeDeadlineSeconds", int64(30))),
			reject: []string{"completionPolicy.activeDeadlineSeconds must be at least pullPolicy.timeoutSeconds"}},
		{name: "pulljob/completionPolicy-type-unknown", write: create(gvrPullJob, pullJob("cp-unknown", "busybox"), set("spec.completionPolicy.type", "Sometimes")),
			reject: []string{"spec.completionPolicy.type", `Unsupported value: "Sometimes"`}},
		{name: "pulljob/completionPolicy-never-with-deadline", write: create(gvrPullJob, pullJob("cp-never", "busybox"), set("spec.completionPolicy.type", "Never")),
			reject: []string{"activeDeadlineSeconds and ttlSecondsAfterFinished require completionPolicy type Always"}},
		{name: "pulljob/completionPolicy-missing", write: create(gvrPullJob, pullJob("cp-missing", "busybox"), func(m map[string]any) {
			unstructured.RemoveNestedField(m, "spec", "completionPolicy")
		}), reject: []string{"spec.completionPolicy: Required value"}},
		{name: "pulljob/selector-names-and-labels", write: create(gvrPullJob, pullJob("names-and-labels", "busybox"), set("spec.selector.matchLabels", map[string]any{"a": "b"})),
			reject: []string{"spec.selector", "selector.names cannot be combined with matchLabels or matchExpressions"}},
		{name: "pulljob/selector-and-podSelector", write: create(gvrPullJob, pullJob("both-selectors", "busybox"), set("spec.podSelector.matchLabels", map[string]any{"a": "b"})),
			reject: []string{"selector and podSelector are mutually exclusive"}},
		{name: "pulljob/selector-duplicate-names", write: create(gvrPullJob, pullJob("dup-names", "busybox"), setList("spec.selector.names", "vm", "vm")),
			reject: []string{"spec.selector.names[1]", "Duplicate value"}},

		// ---- ImagePullJob: refused by kruise's validating webhook ----
		// (kruise-controller fails them with InvalidImage and the same words where the webhook is
		// not called.)
		{name: "pulljob/image-uppercase", write: create(gvrPullJob, pullJob("upper", "127.0.0.1:5000/Public/Busybox:1.35")),
			reject: []string{`admission webhook "vimagepulljob-v1beta1.kb.io" denied the request`,
				`spec.image: Invalid value: "127.0.0.1:5000/Public/Busybox:1.35": invalid image reference "127.0.0.1:5000/Public/Busybox:1.35"`}},
		{name: "pulljob/image-spaces", write: create(gvrPullJob, pullJob("spaces", "busy box:1")),
			reject: []string{"vimagepulljob-v1beta1.kb.io", `invalid image reference "busy box:1"`}},
		{name: "pulljob/image-short-digest", write: create(gvrPullJob, pullJob("short-digest", "busybox@sha256:abc")),
			reject: []string{"vimagepulljob-v1beta1.kb.io", `invalid image reference "busybox@sha256:abc"`}},
		{name: "pulljob/v1alpha1-image-uppercase", write: create(gvrPullJobV1a1, func(e *malEnv) runtime.Object {
			j := malPullJob(e, "v1alpha1-upper", "Busybox")
			j.APIVersion = "apps.kruise.io/v1alpha1"
			return j
		}), reject: []string{"vimagepulljob-v1beta1.kb.io", `ImagePullJob.apps.kruise.io "v1alpha1-upper" is invalid`, `invalid image reference "Busybox"`}},

		// ---- ImagePullJob: accepted, then failed by kruise with the reason ----
		{name: "pulljob/selector-operator-invalid", write: create(gvrPullJob, pullJob("bad-operator", "busybox"), func(m map[string]any) {
			unstructured.RemoveNestedField(m, "spec", "selector", "names")
			set("spec.selector.matchExpressions", []any{map[string]any{"key": "a", "operator": "Like", "values": []any{"b"}}})(m)
		}), expect: pullJobFinished(gvrPullJob, "bad-operator", `Failed: invalid selector: "Like" is not a valid label selector operator`, "InvalidSelector", "Like")},
		{name: "pulljob/selector-label-key-invalid", write: create(gvrPullJob, pullJob("bad-label-key", "busybox"), func(m map[string]any) {
			unstructured.RemoveNestedField(m, "spec", "selector", "names")
			set("spec.selector.matchLabels", map[string]any{"bad key!": "x"})(m)
		}), expect: pullJobFinished(gvrPullJob, "bad-label-key", "Failed: invalid selector", "InvalidSelector", "bad key!")},
		{name: "pulljob/podSelector-exists-with-values", write: create(gvrPullJob, pullJob("bad-pod-selector", "busybox"), func(m map[string]any) {
			unstructured.RemoveNestedField(m, "spec", "selector")
			set("spec.podSelector.matchExpressions", []any{map[string]any{"key": "a", "operator": "Exists", "values": []any{"b"}}})(m)
		}), expect: pullJobFinished(gvrPullJob, "bad-pod-selector", "Failed: invalid podSelector", "InvalidSelector", "values set must be empty")},
		{name: "pulljob/pullSecret-missing", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			j := freshPullJob(t, e, "secret-missing")
			j.Spec.PullSecrets = []string{"no-such-secret"}
			_, err := e.createMap(ctx, t, gvrPullJob, j)
			return err
		}, expect: pullJobEvent("secret-missing", "PullSecretNotFound", "no-such-secret")},
		// Values below the range, which OpenKruise admits too: a timeout below 1 is read as
		// the default (600), a backoff limit below 0 as the default (3). The job simply runs.
		{name: "pulljob/timeoutSeconds-negative", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			j := freshPullJob(t, e, "timeout-neg")
			j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](-1)
			_, err := e.createMap(ctx, t, gvrPullJob, j)
			return err
		}, expect: pullJobFinished(gvrPullJob, "timeout-neg", "Completed: 1/1 nodes succeeded", "Completed", "")},
		{name: "pulljob/backoffLimit-negative", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			j := freshPullJob(t, e, "backoff-neg")
			j.Spec.PullPolicy.BackoffLimit = ptr.To[int32](-1)
			_, err := e.createMap(ctx, t, gvrPullJob, j)
			return err
		}, expect: pullJobFinished(gvrPullJob, "backoff-neg", "Completed: 1/1 nodes succeeded", "Completed", "")},
		// Any imagePullPolicy, as in OpenKruise: one other than IfNotPresent pulls as Always.
		{name: "pulljob/imagePullPolicy-unknown", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			j := freshPullJob(t, e, "ipp-never")
			j.Spec.ImagePullPolicy = "Never"
			_, err := e.createMap(ctx, t, gvrPullJob, j)
			return err
		}, expect: pullJobFinished(gvrPullJob, "ipp-never", "Completed: 1/1 nodes succeeded", "Completed", "")},
		// The largest values the schema allows are taken as they come: the job simply runs.
		{name: "pulljob/largest-values", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			j := freshPullJob(t, e, "largest")
			j.Spec.Parallelism = ptr.To(intstr.FromString("999999999"))
			j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](math.MaxInt32 - 1)
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](math.MaxInt64)
			j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](math.MaxInt32)
			_, err := e.createMap(ctx, t, gvrPullJob, j)
			return err
		}, expect: pullJobFinished(gvrPullJob, "largest", "Completed: 1/1 nodes succeeded", "Completed", "")},

		// ---- ImageListPullJob ----
		{name: "listjob/images-empty", write: create(gvrListJob, func(e *malEnv) runtime.Object { return malListJob(e, "no-images") }, setList("spec.images")),
			reject: []string{"spec.images", "should have at least 1 items"}},
		{name: "listjob/image-empty-string", write: create(gvrListJob, func(e *malEnv) runtime.Object { return malListJob(e, "empty-image", "") }),
			reject: []string{"spec.images[0]", "at least 1 chars long"}},
		{name: "listjob/image-invalid", write: create(gvrListJob, func(e *malEnv) runtime.Object { return malListJob(e, "invalid-image", "busybox", "Not Valid") }),
			reject: []string{`admission webhook "vimagelistpulljob-v1beta1.kb.io" denied the request`,
				`spec.images[1]: Invalid value: "Not Valid": invalid image reference "Not Valid"`}},
		// A duplicate is pulled once: one ImagePullJob, desired 1.
		{name: "listjob/images-duplicate", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			image := e.f.UniqueImage("public/")
			framework.PushImage(t, image, nil)
			_, err := e.createMap(ctx, t, gvrListJob, malListJob(e, "dup-images", image, image))
			return err
		}, expect: listJobFinished("dup-images", func(j *appsv1beta1.ImageListPullJob) error {
			if s := j.Status; s.Desired != 1 || s.Succeeded != 1 || len(s.FailedImageStatuses) != 0 {
				return fmt.Errorf("want desired=1 succeeded=1 and no failed image")
			}
			return nil
		})},

		// A deadline shorter than the pull timeout, which OpenKruise admits on a list job (not
		// on an ImagePullJob): the list's ImagePullJob pulls with the timeout lowered to the
		// deadline, and the creation Event says so.
		{name: "listjob/deadline-below-timeout", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			image := e.f.UniqueImage("public/")
			framework.PushImage(t, image, nil)
			l := malListJob(e, "short-deadline", image)
			l.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](600)
			l.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](120)
			_, err := e.createMap(ctx, t, gvrListJob, l)
			return err
		}, expect: both(listJobFinished("short-deadline", func(j *appsv1beta1.ImageListPullJob) error {
			if s := j.Status; s.Desired != 1 || s.Succeeded != 1 {
				return fmt.Errorf("want desired=1 succeeded=1")
			}
			return nil
		}), func(ctx context.Context, e *malEnv) (bool, string, error) {
			return hasEvent(ctx, e, e.ns, "ImageListPullJob", "short-deadline", "CreatedImagePullJob",
				"pullPolicy.timeoutSeconds 600 lowered to completionPolicy.activeDeadlineSeconds 120")
		})},

		// A valid object name longer than a label value (63 characters).
		{name: "listjob/name-longer-than-a-label", write: func(ctx context.Context, t *testing.T, e *malEnv) error {
			image := e.f.UniqueImage("public/")
			framework.PushImage(t, image, nil)
			_, err := e.createMap(ctx, t, gvrListJob, malListJob(e, "long-"+strings.Repeat("n", 70), image))
			return err
		}, expect: listJobFinished("long-"+strings.Repeat("n", 70), func(j *appsv1beta1.ImageListPullJob) error {
			if s := j.Status; s.Desired != 1 || s.Succeeded != 1 {
				return fmt.Errorf("want desired=1 succeeded=1")
			}
			return nil
		})},

		// ---- NodeImage edited by a user: kruise-daemon reports, it does not crash ----
		func() malCase {
			r := repo("Upper")
			return malCase{name: "nodeimage/uppercase-name-and-tag-with-space", write: editNodeImage(r, tag("bad tag")),
				expect: nodeImageTagFailed(r, "bad tag", "invalid reference format")}
		}(),
		func() malCase {
			r := repo("digest")
			return malCase{name: "nodeimage/short-digest", write: editNodeImage(r, tag("sha256:abc")),
				expect: nodeImageTagFailed(r, "sha256:abc", "invalid reference format")}
		}(),
		func() malCase {
			r := "e2e malformed " + rand.String(5)
			return malCase{name: "nodeimage/name-with-spaces", write: editNodeImage(r, tag("v1")),
				expect: nodeImageTagFailed(r, "v1", "invalid reference format")}
		}(),
		{name: "nodeimage/timeoutSeconds-over-int32", write: editNodeImage(repo("timeout"), map[string]any{"tag": "v1", "pullPolicy": map[string]any{"timeoutSeconds": huge}}),
			reject: []string{"pullPolicy.timeoutSeconds", over}},
		// Any imagePullPolicy, as in OpenKruise: the daemon pulls (as Always) and reports.
		func() malCase {
			r := repo("policy")
			t := tag("v1")
			t["imagePullPolicy"] = "Sometimes"
			return malCase{name: "nodeimage/imagePullPolicy-unknown", write: editNodeImage(r, t),
				expect: nodeImageTagFailed(r, "v1", "failed to pull")}
		}(),
		{name: "nodeimage/createdAt-not-a-time", write: editNodeImage(repo("created"), map[string]any{"tag": "v1", "createdAt": "yesterday"}),
			reject: []string{"createdAt", "must be of type date-time"}},

		// ---- Job sidecar terminator: env values it cannot read are reported ----
		{name: "sidecar/env-yes", write: create(gvrJob, func(e *malEnv) runtime.Object { return malSidecarJob(e, "env-yes", mark("yes")) }),
			expect: jobPodEvent("env-yes", false, framework.EventInvalidSidecarEnv, `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT="yes" is neither "true" nor "false"`, "treated as a main container")},
		{name: "sidecar/env-TRUE-with-space", write: create(gvrJob, func(e *malEnv) runtime.Object { return malSidecarJob(e, "env-true-space", mark("TRUE ")) }),
			expect: jobPodEvent("env-true-space", false, framework.EventInvalidSidecarEnv, `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT="TRUE " is neither`)},
		{name: "sidecar/env-empty", write: create(gvrJob, func(e *malEnv) runtime.Object { return malSidecarJob(e, "env-empty", mark("")) }),
			expect: jobPodEvent("env-empty", false, framework.EventInvalidSidecarEnv, `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT="" is neither`)},
		// Still a sidecar (the value is not empty): stopped as usual on a node with a daemon.
		{name: "sidecar/with-image-invalid", write: create(gvrJob, func(e *malEnv) runtime.Object {
			return malSidecarJob(e, "with-image-invalid", corev1.EnvVar{Name: framework.EnvTerminateSidecarWithImage, Value: "Not An Image!"})
		}), expect: jobPodEvent("with-image-invalid", true, framework.EventInvalidSidecarEnv, `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE="Not An Image!" is not a valid image reference`)},
		// The annotation kruise writes when it records the phase: a value already there is
		// overwritten, and the Job completes.
		{name: "sidecar/garbage-terminated-at-annotation", write: create(gvrJob, func(e *malEnv) runtime.Object {
			j := malSidecarJob(e, "garbage-annotation", framework.SidecarMark())
			j.Spec.Template.Annotations = map[string]string{framework.AnnotationSidecarTerminatedAt: "garbage"}
			return j
		}), expect: func(ctx context.Context, e *malEnv) (bool, string, error) {
			if ok, seen, err := jobComplete(ctx, e, "garbage-annotation"); !ok || err != nil {
				return ok, seen, err
			}
			pod, seen, err := jobPod(ctx, e, "garbage-annotation")
			if pod == nil || err != nil {
				return false, seen, err
			}
			v := pod.Annotations[framework.AnnotationSidecarTerminatedAt]
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return false, "", fmt.Errorf("annotation %s is %q, want the time kruise recorded the phase", framework.AnnotationSidecarTerminatedAt, v)
			}
			return true, "", nil
		}},
	}
	return cases
}
