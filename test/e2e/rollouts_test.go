//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
	"github.com/nodekruise/kruise/test/netns"
	"github.com/nodekruise/kruise/test/proc"
)

// OpenKruise's Rollout controller (kruise-rollout, github.com/openkruise/rollouts) drives kruise's
// workloads as it drives OpenKruise's: hack/build-rollouts.sh builds it from the Go module proxy
// into the cache, and the test runs it as a host process beside the cluster (docs/rollouts.md).

var rolloutGVR = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1beta1", Resource: "rollouts"}

// rolloutBuild is kruise-rollout built once per test binary (the script is cached across runs).
var rolloutBuild struct {
	once      sync.Once
	bin, crds string
	err       error
}

func buildKruiseRollout(t *testing.T) (bin, crds string) {
	t.Helper()
	rolloutBuild.once.Do(func() {
		cmd := exec.Command(filepath.Join("..", "..", "hack", "build-rollouts.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			rolloutBuild.err = fmt.Errorf("hack/build-rollouts.sh: %w", err)
			return
		}
		rolloutBuild.bin = strings.TrimSpace(string(out))
		rolloutBuild.crds = filepath.Join(filepath.Dir(rolloutBuild.bin), "crds")
	})
	if rolloutBuild.err != nil {
		t.Fatal(rolloutBuild.err)
	}
	return rolloutBuild.bin, rolloutBuild.crds
}

// installRolloutCRDs creates the release's CRDs that the cluster does not have yet and waits until
// they are established. They stay installed: they are inert without the controller.
func installRolloutCRDs(ctx context.Context, t *testing.T, f *framework.Framework, dir string) {
	t.Helper()
	cc, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v)", dir, err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, err := cc.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
		framework.WaitFor(ctx, t, 30*time.Second, "CRD "+crd.Name+" established", func(ctx context.Context) (bool, string, error) {
			got, err := cc.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, "established", nil
				}
			}
			return false, fmt.Sprintf("conditions %v", got.Status.Conditions), nil
		})
	}
}

// The names kruise-rollout looks for: it fills in the CA bundle and, with WEBHOOK_HOST set, turns
// each webhook's service reference into a URL on that host; it never creates them.
const (
	rolloutMutatingName   = "kruise-rollout-mutating-webhook-configuration"
	rolloutValidatingName = "kruise-rollout-validating-webhook-configuration"
)

// rolloutWebhooks are the webhook configurations of the release's config/webhook (manifests.yaml
// with patch_manifests.yaml's object selectors), the Deployment and DaemonSet hooks left out, and
// each scoped to namespaces labelled scope so that no other test's objects go through them.
func rolloutWebhooks(ns, scope string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	svc := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: ns, Name: "kruise-rollout-webhook-service", Path: ptr.To(path)}}
	}
	nsSel := &metav1.LabelSelector{MatchLabels: map[string]string{"kruise.e2e/rollouts": scope}}
	typed := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "rollouts.kruise.io/workload-type", Operator: metav1.LabelSelectorOpExists}}}
	rule := func(group, version, resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}}}
	}
	fail, none := ptr.To(admissionregistrationv1.Fail), ptr.To(admissionregistrationv1.SideEffectClassNone)
	versions := []string{"v1", "v1beta1"}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: rolloutMutatingName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mcloneset.kb.io", ClientConfig: svc("/mutate-apps-kruise-io-v1alpha1-cloneset"),
			Rules:         rule("apps.kruise.io", "v1alpha1", "clonesets", admissionregistrationv1.Update),
			FailurePolicy: fail, SideEffects: none, AdmissionReviewVersions: versions, NamespaceSelector: nsSel, ObjectSelector: typed,
		}, {
			Name: "munifiedworload.kb.io", ClientConfig: svc("/mutate-unified-workload"),
			Rules:         rule("*", "*", "*", admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy: fail, SideEffects: none, AdmissionReviewVersions: versions, NamespaceSelector: nsSel, ObjectSelector: typed,
		}},
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: rolloutValidatingName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "vrollout.kb.io", ClientConfig: svc("/validate-rollouts-kruise-io-rollout"),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"rollouts.kruise.io"}, APIVersions: []string{"v1alpha1", "v1beta1"},
					Resources: []string{"rollouts"}}}},
			FailurePolicy: fail, SideEffects: none, AdmissionReviewVersions: versions, NamespaceSelector: nsSel,
		}},
	}
	return m, v
}

// startKruiseRollout runs kruise-rollout as a host process in a network namespace of its own
// with the test's kubeconfig, its webhook reached on a free port of 127.0.0.1 with a certificate it makes itself (WEBHOOK_HOST), and
// stops it by its PID, and removes its webhook configurations, when t ends. It returns the label
// value a namespace needs (kruise.e2e/rollouts) for its workloads to go through the webhooks.
func startKruiseRollout(ctx context.Context, t *testing.T, f *framework.Framework) string {
	t.Helper()
	bin, crds := buildKruiseRollout(t)
	installRolloutCRDs(ctx, t, f, crds)
	ns := f.NewNamespace(ctx, t, "rollout-ctl")
	scope := rand.String(8)

	admission := f.Client.AdmissionregistrationV1()
	deleteConfigs := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = admission.MutatingWebhookConfigurations().Delete(ctx, rolloutMutatingName, metav1.DeleteOptions{})
		_ = admission.ValidatingWebhookConfigurations().Delete(ctx, rolloutValidatingName, metav1.DeleteOptions{})
	}
	deleteConfigs() // left over by an interrupted run
	// Registered before the process is started, so run after it is stopped (cleanups run last
	// first); the workloads' namespaces went before, with the process still answering.
	t.Cleanup(deleteConfigs)
	m, v := rolloutWebhooks(ns, scope)
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", m.Name, err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", v.Name, err)
	}

	// kruise-rollout listens on 0.0.0.0 (its webhook server's host is fixed): it runs in a network
	// namespace of its own, the API server forwarded in at the kubeconfig's address, and its
	// webhook forwarded out to the same port on the host's 127.0.0.1, the URL it writes.
	n, err := netns.New(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close) // after the process is stopped (cleanups run last first)
	if err := n.ForwardServer(f.Config.Host); err != nil {
		t.Fatal(err)
	}
	port := freeLoopbackPort(t)
	if _, err := n.ForwardIn(port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Metrics and health probes off (0): nothing but the webhook listens. nsenter and env(1)
	// exec: the PID is kruise-rollout's own.
	nsenter := n.Command("env",
		"KUBECONFIG="+os.Getenv("KUBECONFIG"), "POD_NAMESPACE="+ns,
		"WEBHOOK_HOST=127.0.0.1", "WEBHOOK_PORT="+strconv.Itoa(port), "WEBHOOK_CERT_DIR="+filepath.Join(dir, "certs"),
		bin, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false", "--v=2")
	cmd := proc.Start(t, filepath.Join(dir, "kruise-rollout.log"), nsenter.Path, nsenter.Args[1:]...)
	t.Logf("kruise-rollout pid %d, webhook 127.0.0.1:%d, log %s", cmd.Process.Pid, port, filepath.Join(dir, "kruise-rollout.log"))

	framework.WaitFor(ctx, t, 60*time.Second, "kruise-rollout's webhooks configured and serving", func(ctx context.Context) (bool, string, error) {
		if err := proc.Running(cmd); err != nil {
			return false, "", err
		}
		got, err := admission.MutatingWebhookConfigurations().Get(ctx, rolloutMutatingName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		roots := x509.NewCertPool()
		for _, w := range got.Webhooks {
			if w.ClientConfig.URL == nil || !roots.AppendCertsFromPEM(w.ClientConfig.CABundle) {
				return false, "webhook " + w.Name + " not pointed at the process yet", nil
			}
		}
		// As the API server will: the serving certificate must chain to the CA it was given.
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{RootCAs: roots})
		if err != nil {
			return false, err.Error(), nil
		}
		conn.Close()
		return true, "serving", nil
	})
	return scope
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	port, err := netns.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// canaryRollout is a v1beta1 Rollout of the workload in steps of 20%, 50% and 100% of its pods,
// each of the first two paused until approved (the last one, 100%, ends the rollout).
func canaryRollout(ns, apiVersion, kind, name string) *unstructured.Unstructured {
	step := func(replicas string) map[string]any {
		return map[string]any{"replicas": replicas, "pause": map[string]any{}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rollouts.kruise.io/v1beta1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"workloadRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name},
			"strategy": map[string]any{"canary": map[string]any{
				"steps": []any{step("20%"), step("50%"), step("100%")},
			}},
		},
	}}
}

// rolloutState is what the test records of a Rollout's status at each change.
type rolloutState struct {
	Phase string
	Step  int64
	State string
}

func (s rolloutState) String() string { return fmt.Sprintf("%s/%d/%s", s.Phase, s.Step, s.State) }

// fromStep1 is states from the first one at step 1 on.
func fromStep1(states []rolloutState) []rolloutState {
	for i, s := range states {
		if s.Step == 1 {
			return states[i:]
		}
	}
	return nil
}

func rolloutStateOf(u *unstructured.Unstructured) rolloutState {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	step, _, _ := unstructured.NestedInt64(u.Object, "status", "canaryStatus", "currentStepIndex")
	state, _, _ := unstructured.NestedString(u.Object, "status", "canaryStatus", "currentStepState")
	return rolloutState{Phase: phase, Step: step, State: state}
}

// rolloutConditions are the Rollout's conditions as type: "status/reason".
func rolloutConditions(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		out[typ] = status + "/" + reason
	}
	return out
}

// workloadState is a workload's partition, pause and updated pods at a paused step.
type workloadState struct {
	Partition string
	Paused    bool
	Updated   int32
	Ready     int32
}

// rolloutRecorder watches a Rollout from before the update on and keeps each distinct state in
// order (a watch sees every change, where polling could miss a short one).
type rolloutRecorder struct {
	mu     sync.Mutex
	states []rolloutState
	cur    *unstructured.Unstructured
}

func recordRollout(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) *rolloutRecorder {
	t.Helper()
	w, err := f.Dynamic(t).Resource(rolloutGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watching Rollout %s: %v", name, err)
	}
	r := &rolloutRecorder{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			s := rolloutStateOf(u)
			r.mu.Lock()
			if n := len(r.states); n == 0 || r.states[n-1] != s {
				r.states = append(r.states, s)
			}
			r.cur = u
			r.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return r
}

func (r *rolloutRecorder) since(i int) []rolloutState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rolloutState(nil), r.states[min(i, len(r.states)):]...)
}

func (r *rolloutRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.states)
}

// waitRollout waits until the Rollout's latest state is want.
func waitRollout(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, want rolloutState) {
	t.Helper()
	framework.WaitFor(ctx, t, 90*time.Second, "Rollout "+name+" at "+want.String(), func(ctx context.Context) (bool, string, error) {
		u, err := f.Dynamic(t).Resource(rolloutGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		got := rolloutStateOf(u)
		return got == want, got.String() + ": " + msg, nil
	})
}

// approveRollout does what `kubectl kruise rollout approve` does: the paused step's state becomes
// StepReady in the Rollout's status, and the controller moves on to the next step.
func approveRollout(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) {
	t.Helper()
	patch := []byte(`{"status":{"canaryStatus":{"currentStepState":"StepReady"}}}`)
	if _, err := f.Dynamic(t).Resource(rolloutGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("approving Rollout %s: %v", name, err)
	}
}

// canaryWorkload is what the test needs of a CloneSet or an Advanced StatefulSet.
type canaryWorkload struct {
	apiVersion, kind string
	create           func(ctx context.Context) error
	// state reads the workload once its status has observed its spec (ok false before).
	state    func(ctx context.Context) (s workloadState, ok bool, err error)
	setImage func(ctx context.Context, image string) error
	// atPaused is the workload at each of wantPaused: a CloneSet's partition is written as a
	// percentage of its pods, an Advanced StatefulSet's as a number.
	atPaused []workloadState
	// revision is the workload's update revision.
	revision func(ctx context.Context) (string, error)
}

// The rollout's course as OpenKruise gives it (how it was derived: docs/rollouts.md): with 5
// pods, step 1 (20%) updates 1 pod (partition 4 of 5), step 2 (50%) 3 (partition 2), step 3
// (100%) all, after which the partition is taken off; the workload is never left paused; each of
// the first two steps waits in StepPaused for the approval, and the Rollout ends Healthy with the
// canary Completed.
var (
	// wantPaused are the Rollout's states where it waits for an approval.
	wantPaused = []rolloutState{{"Progressing", 1, "StepPaused"}, {"Progressing", 2, "StepPaused"}}
	// wantDone is the workload once the Rollout is done: pause and partition taken off (set to
	// null, which kruise's defaulting, as OpenKruise's, stores as 0).
	wantDone  = workloadState{Partition: "0", Updated: 5, Ready: 5}
	wantFinal = rolloutState{"Healthy", 3, "Completed"}
	// wantSteps is the sequence of states the Rollout passes through from the image change to
	// the end, by kruise-rollout v0.6.1's state machine (pkg/controller/rollout): one status
	// update per state; a step of 100% skips StepTrafficRouting and does not wait in StepPaused.
	// The states before step 1 are left out: on a workload at rest kruise-rollout v0.6.1 starts
	// from Healthy/0/"" or Healthy/3/Completed depending on its own reconcile timing (both seen
	// on kruise), then goes to Progressing through one or two updates.
	wantSteps = []rolloutState{
		{"Progressing", 1, "BeforeStepUpgrade"}, {"Progressing", 1, "StepUpgrade"}, {"Progressing", 1, "StepTrafficRouting"},
		{"Progressing", 1, "StepMetricsAnalysis"}, {"Progressing", 1, "StepPaused"}, {"Progressing", 1, "StepReady"},
		{"Progressing", 2, "BeforeStepUpgrade"}, {"Progressing", 2, "StepUpgrade"}, {"Progressing", 2, "StepTrafficRouting"},
		{"Progressing", 2, "StepMetricsAnalysis"}, {"Progressing", 2, "StepPaused"}, {"Progressing", 2, "StepReady"},
		{"Progressing", 3, "BeforeStepUpgrade"}, {"Progressing", 3, "StepUpgrade"},
		{"Progressing", 3, "StepMetricsAnalysis"}, {"Progressing", 3, "StepPaused"}, {"Progressing", 3, "StepReady"},
		{"Progressing", 3, "Completed"}, wantFinal,
	}
)

func waitWorkloadState(ctx context.Context, t *testing.T, w canaryWorkload, at string, want workloadState) {
	t.Helper()
	framework.WaitFor(ctx, t, 30*time.Second, fmt.Sprintf("%s at %s: %+v", w.kind, at, want), func(ctx context.Context) (bool, string, error) {
		s, ok, err := w.state(ctx)
		return ok && s == want, fmt.Sprintf("%+v (status observed the spec: %v)", s, ok), err
	})
}

// runCanary drives one workload of 5 pods through the canary and checks the course and that every
// pod was updated in place.
func runCanary(ctx context.Context, t *testing.T, f *framework.Framework, ns string, w canaryWorkload, settled func() map[string]corev1.Pod) {
	t.Helper()
	const name = "web"
	if err := w.create(ctx); err != nil {
		t.Fatalf("creating %s: %v", w.kind, err)
	}
	before := settled()
	rollouts := f.Dynamic(t).Resource(rolloutGVR).Namespace(ns)
	if _, err := rollouts.Create(ctx, canaryRollout(ns, w.apiVersion, w.kind, name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Rollout: %v", err)
	}
	// The Rollout carries kruise-rollout's finalizer: it must go while the process still runs
	// (this subtest's cleanups run before its parent's stop it), or its namespace stays.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rollouts.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Rollout: %v", err)
			return
		}
		framework.WaitFor(ctx, t, 30*time.Second, "Rollout "+name+" gone", func(ctx context.Context) (bool, string, error) {
			_, err := rollouts.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "gone", nil
			}
			return false, "still there", err
		})
	})
	rec := recordRollout(ctx, t, f, ns, name)
	// Healthy, its canary status either empty or, when kruise-rollout has looked at the stable
	// workload again, Completed at the last step (both seen from v0.6.1).
	healthy := rolloutState{Phase: "Healthy"}
	framework.WaitFor(ctx, t, 90*time.Second, "Rollout "+name+" Healthy", func(ctx context.Context) (bool, string, error) {
		u, err := rollouts.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got := rolloutStateOf(u)
		return got.Phase == healthy.Phase, got.String(), nil
	})
	// The course is counted from the watch's Healthy on (the watch may lag the read above).
	framework.WaitFor(ctx, t, 10*time.Second, "the watch of Rollout "+name+" at Healthy", func(context.Context) (bool, string, error) {
		got := rec.since(0)
		return len(got) > 0 && got[len(got)-1].Phase == healthy.Phase, fmt.Sprint(got), nil
	})
	start := rec.len()

	variant := f.BusyboxVariant(t)
	if err := w.setImage(ctx, variant); err != nil {
		t.Fatalf("changing the image: %v", err)
	}
	for i, want := range wantPaused {
		waitRollout(ctx, t, f, ns, name, want)
		waitWorkloadState(ctx, t, w, fmt.Sprintf("step %d", i+1), w.atPaused[i])
		// Paused means paused: nothing moves until the approval.
		framework.Consistently(ctx, t, 2*time.Second, fmt.Sprintf("%s held at step %d", w.kind, i+1), func(ctx context.Context) (bool, string, error) {
			s, _, err := w.state(ctx)
			return s == w.atPaused[i], fmt.Sprintf("%+v", s), err
		})
		approveRollout(ctx, t, f, ns, name)
	}
	waitRollout(ctx, t, f, ns, name, wantFinal)
	waitWorkloadState(ctx, t, w, "the end", wantDone)
	after := settled()
	// As the release's own e2e checks on OpenKruise: Progressing ends False (Completed), Succeeded True.
	u, err := f.Dynamic(t).Resource(rolloutGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rolloutConditions(u); got["Progressing"] != "False/Completed" || !strings.HasPrefix(got["Succeeded"], "True/") {
		t.Errorf("Rollout conditions %v, want Progressing False/Completed and Succeeded True", got)
	}

	revision, err := w.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkUpdatedInPlace(t, before, after, variant, revision, true)
	got := fromStep1(rec.since(start))
	t.Logf("Rollout went through %v", got)
	if fmt.Sprint(got) != fmt.Sprint(wantSteps) {
		t.Errorf("Rollout went through\n  %v\nwant\n  %v", got, wantSteps)
	}
}

// A canary of kruise-rollout (20% → 50% → 100%, approved between steps) over a CloneSet and
// over an Advanced StatefulSet completes, in place, with the same course as on OpenKruise.
func TestKruiseRolloutCanary(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	scope := startKruiseRollout(ctx, t, f)
	newNS := func(t *testing.T, prefix string) string {
		ns := f.NewNamespace(ctx, t, prefix)
		patch := fmt.Sprintf(`{"metadata":{"labels":{"kruise.e2e/rollouts":%q}}}`, scope)
		if _, err := f.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return ns
	}

	// The two run one after the other inside this test's slot: parallel subtests would wait for
	// slots of their own while this test's context and kruise-rollout run down.
	t.Run("CloneSet", func(t *testing.T) {
		ns := newNS(t, "rollout-cs")
		cs := busyboxCloneSet(f, ns, "web", 5, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
		runCanary(ctx, t, f, ns, canaryWorkload{
			apiVersion: "apps.kruise.io/v1alpha1", kind: "CloneSet",
			atPaused: []workloadState{{Partition: "80%", Updated: 1, Ready: 1}, {Partition: "40%", Updated: 3, Ready: 3}},
			create: func(ctx context.Context) error {
				_, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
				return err
			},
			state: func(ctx context.Context) (workloadState, bool, error) {
				got, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return workloadState{}, false, err
				}
				s := workloadState{Paused: got.Spec.UpdateStrategy.Paused, Updated: got.Status.UpdatedReplicas, Ready: got.Status.UpdatedReadyReplicas}
				if p := got.Spec.UpdateStrategy.Partition; p != nil {
					s.Partition = p.String()
				}
				return s, got.Status.ObservedGeneration == got.Generation, nil
			},
			setImage: func(ctx context.Context, image string) error {
				_, err := patchCloneSet(ctx, kc, ns, "web", imagePatch(image))
				return err
			},
			revision: func(ctx context.Context) (string, error) {
				got, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return got.Status.UpdateRevision, nil
			},
		}, func() map[string]corev1.Pod { return waitPodsSettled(ctx, t, f, kc, ns, "web", 5) })
	})

	t.Run("AdvancedStatefulSet", func(t *testing.T) {
		ns := newNS(t, "rollout-asts")
		set := busyboxStatefulSet(f, ns, "web", 5)
		set.Spec.PodManagementPolicy = "Parallel"
		// In-place updates need the gate (as on OpenKruise: admission requires it).
		set.Spec.Template.Spec.ReadinessGates = append(set.Spec.Template.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
		set.Spec.UpdateStrategy = appsv1beta1.StatefulSetUpdateStrategy{
			Type: "RollingUpdate",
			RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{
				PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType,
				MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
			},
		}
		names := []string{"web-0", "web-1", "web-2", "web-3", "web-4"}
		runCanary(ctx, t, f, ns, canaryWorkload{
			apiVersion: "apps.kruise.io/v1beta1", kind: "StatefulSet",
			atPaused: []workloadState{{Partition: "4", Updated: 1, Ready: 1}, {Partition: "2", Updated: 3, Ready: 3}},
			create: func(ctx context.Context) error {
				_, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
				return err
			},
			state: func(ctx context.Context) (workloadState, bool, error) {
				got, err := kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return workloadState{}, false, err
				}
				s := workloadState{Updated: got.Status.UpdatedReplicas, Ready: got.Status.UpdatedReadyReplicas}
				if ru := got.Spec.UpdateStrategy.RollingUpdate; ru != nil {
					s.Paused = ru.Paused
					if ru.Partition != nil {
						s.Partition = strconv.Itoa(int(*ru.Partition))
					}
				}
				return s, got.Status.ObservedGeneration == got.Generation, nil
			},
			setImage: func(ctx context.Context, image string) error {
				_, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(imagePatch(image)), metav1.PatchOptions{})
				return err
			},
			revision: func(ctx context.Context) (string, error) {
				got, err := kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return got.Status.UpdateRevision, nil
			},
		}, func() map[string]corev1.Pod {
			waitStatefulSet(ctx, t, f, kc, ns, "web", names...)
			return stsPods(ctx, t, f, ns, "web")
		})
	})
}
