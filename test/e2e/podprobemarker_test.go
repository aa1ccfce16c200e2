//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// ppmMarkTimeout bounds a probe flip reaching the pod: a 1 s period, the daemon's status write,
// the controller's patches, with room for a loaded machine.
const ppmMarkTimeout = 45 * time.Second

// ppmScript is what the probed pods run: an HTTP server on 8080 serving /healthz, and /tmp/idle
// created at each container start.
const ppmScript = "mkdir -p /www && echo ok > /www/healthz; httpd -f -p 8080 -h /www & touch /tmp/idle; trap 'exit 0' TERM; sleep 36000 & wait"

// ppmPod is a running pod labelled app=<label> whose container "main" runs ppmScript.
func ppmPod(ctx context.Context, t *testing.T, f *framework.Framework, ns, name, label string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": label}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{
			Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", ppmScript},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}}}
	return f.CreateRunningPod(ctx, t, p)
}

func execProbe(cmd ...string) appsv1alpha1.ContainerProbeSpec {
	return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}}
}

// idleMarker is a marker of the pods labelled app=<label> with one exec probe "idle" (test -f
// /tmp/idle): condition e2e.kruise.io/idle, label idle=true/false, annotation state=idle/busy.
func idleMarker(ns, name, label string) *appsv1alpha1.PodProbeMarker {
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": label}},
			Probes: []appsv1alpha1.PodContainerProbe{{
				Name: "idle", ContainerName: "main", Probe: execProbe("test", "-f", "/tmp/idle"),
				PodConditionType: "e2e.kruise.io/idle",
				MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{
					{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"e2e.kruise.io/idle": "true"},
						Annotations: map[string]string{"e2e.kruise.io/state": "idle"}},
					{State: appsv1alpha1.ProbeFailed, Labels: map[string]string{"e2e.kruise.io/idle": "false"},
						Annotations: map[string]string{"e2e.kruise.io/state": "busy"}},
				},
			}},
		},
	}
}

func createPPM(ctx context.Context, t *testing.T, kc versioned.Interface, m *appsv1alpha1.PodProbeMarker) *appsv1alpha1.PodProbeMarker {
	t.Helper()
	got, err := kc.AppsV1alpha1().PodProbeMarkers(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PodProbeMarker %s: %v", m.Name, err)
	}
	return got
}

func podCondition(pod *corev1.Pod, typ string) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if string(pod.Status.Conditions[i].Type) == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// describeMarks is what a pod carries of the probes' marks: its e2e.kruise.io/ and game.kruise.io/
// labels, annotations and conditions.
func describeMarks(pod *corev1.Pod) string {
	var out []string
	keep := func(k string) bool {
		return strings.Contains(k, "kruise.io/") && !strings.HasPrefix(k, "apps.kruise.io/")
	}
	for k, v := range pod.Labels {
		if keep(k) {
			out = append(out, "label "+k+"="+v)
		}
	}
	for k, v := range pod.Annotations {
		if keep(k) || k == "controller.kubernetes.io/pod-deletion-cost" || k == nodeprobe.MarksAnnotation {
			out = append(out, "annotation "+k+"="+v)
		}
	}
	for _, c := range pod.Status.Conditions {
		if keep(string(c.Type)) {
			out = append(out, fmt.Sprintf("condition %s=%s (%s)", c.Type, c.Status, c.Message))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// waitMarks waits until the pod's marks satisfy want.
func waitMarks(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, desc string, want func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, ppmMarkTimeout, "pod "+name+": "+desc, func(ctx context.Context) (bool, string, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = p
		return want(p), describeMarks(p), nil
	})
	return got
}

// idleMarks says whether the pod carries idleMarker's marks of the state idle (true) or busy.
func idleMarks(idle bool) func(*corev1.Pod) bool {
	status, label, state := corev1.ConditionTrue, "true", "idle"
	if !idle {
		status, label, state = corev1.ConditionFalse, "false", "busy"
	}
	return func(p *corev1.Pod) bool {
		c := podCondition(p, "e2e.kruise.io/idle")
		return c != nil && c.Status == status && p.Labels["e2e.kruise.io/idle"] == label && p.Annotations["e2e.kruise.io/state"] == state
	}
}

func kubectlExec(ctx context.Context, t *testing.T, ns, pod string, cmd ...string) {
	t.Helper()
	args := append([]string{"exec", "-n", ns, pod, "-c", "main", "--"}, cmd...)
	if out, err := framework.KubectlCommand(ctx, t, args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// docs/examples/podprobemarker-idle.yaml as written: the CloneSet's pods are marked idle (exec),
// their HTTP server OK (httpGet on a named port) and listening (tcpSocket); removing /tmp/idle in
// one pod marks it busy (condition False, label false, the other deletion cost), touching it marks
// it idle again; the other pod stays idle throughout.
func TestPodProbeMarkerExample(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "ppm-example")
	var marker *appsv1alpha1.PodProbeMarker
	for _, obj := range exampleObjects(t, "../../docs/examples/podprobemarker-idle.yaml") {
		switch o := obj.(type) {
		case *appsv1alpha1.CloneSet:
			o.Namespace = ns
			createCloneSet(ctx, t, kc, o)
		case *appsv1alpha1.PodProbeMarker:
			marker = o
		}
	}
	if marker == nil {
		t.Fatal("docs/examples/podprobemarker-idle.yaml has no PodProbeMarker")
	}
	pods := waitPodsSettled(ctx, t, f, kc, ns, "game-server", 2)
	marker.Namespace = ns
	createPPM(ctx, t, kc, marker)
	idle := func(p *corev1.Pod) bool {
		c, h := podCondition(p, "game.kruise.io/idle"), podCondition(p, "game.kruise.io/http-ok")
		return c != nil && c.Status == corev1.ConditionTrue && h != nil && h.Status == corev1.ConditionTrue &&
			p.Labels["game.kruise.io/idle"] == "true" && p.Labels["game.kruise.io/listening"] == "true" &&
			p.Annotations["controller.kubernetes.io/pod-deletion-cost"] == "-10"
	}
	busy := func(p *corev1.Pod) bool {
		c := podCondition(p, "game.kruise.io/idle")
		return c != nil && c.Status == corev1.ConditionFalse && c.Message == "exit code 1" &&
			p.Labels["game.kruise.io/idle"] == "false" && p.Annotations["controller.kubernetes.io/pod-deletion-cost"] == "10"
	}
	names := strings.Split(podNames(pods), ",")
	for _, name := range names {
		waitMarks(ctx, t, f.Client, ns, name, "idle, HTTP OK, listening", idle)
	}
	kubectlExec(ctx, t, ns, names[0], "rm", "/tmp/idle")
	waitMarks(ctx, t, f.Client, ns, names[0], "busy once /tmp/idle is gone", busy)
	if p, err := f.Client.CoreV1().Pods(ns).Get(ctx, names[1], metav1.GetOptions{}); err != nil || !idle(p) {
		t.Fatalf("the other pod %s is not idle any more (%v): %s", names[1], err, describeMarks(p))
	}
	kubectlExec(ctx, t, ns, names[0], "touch", "/tmp/idle")
	waitMarks(ctx, t, f.Client, ns, names[0], "idle again", idle)
}

// A probe whose container restarts: the new container instance is probed (the result is that of
// the new container, here Succeeded again as its start recreates /tmp/idle), the condition's
// probe time after the new container started.
func TestPodProbeMarkerContainerRestart(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ppm-restart")
	pod := ppmPod(ctx, t, f, ns, "p0", "ppm-restart")
	createPPM(ctx, t, kc, idleMarker(ns, "restart", "ppm-restart"))
	waitMarks(ctx, t, f.Client, ns, "p0", "idle", idleMarks(true))
	kubectlExec(ctx, t, ns, "p0", "rm", "/tmp/idle")
	pod = waitMarks(ctx, t, f.Client, ns, "p0", "busy", idleMarks(false))

	old := framework.KillContainer(ctx, t, pod, "main")
	pod = f.WaitContainerRestarted(ctx, t, ns, "p0", "main", old, 2*time.Minute)
	started := framework.ContainerStatusOf(pod, "main").State.Running.StartedAt.Time.Truncate(time.Second)
	pod = waitMarks(ctx, t, f.Client, ns, "p0", "idle again, from the new container", idleMarks(true))
	if c := podCondition(pod, "e2e.kruise.io/idle"); c.LastProbeTime.Time.Before(started) {
		t.Errorf("condition probed at %s, before the new container started at %s", c.LastProbeTime, started)
	}
}

// Deleting a marker takes its marks off the pods (condition, labels, annotations, the record),
// its probes off the node's NodePodProbe, and then its finalizer is released.
func TestPodProbeMarkerDeleted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "ppm-delete")
	pod := ppmPod(ctx, t, f, ns, "p0", "ppm-delete")
	m := createPPM(ctx, t, kc, idleMarker(ns, "gone", "ppm-delete"))
	waitMarks(ctx, t, f.Client, ns, "p0", "idle", idleMarks(true))
	framework.WaitFor(ctx, t, time.Minute, "the marker's finalizer", func(ctx context.Context) (bool, string, error) {
		got, err := kc.AppsV1alpha1().PodProbeMarkers(ns).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return slices.Contains(got.Finalizers, appsv1alpha1.PodProbeMarkerFinalizer), fmt.Sprintf("finalizers %v", got.Finalizers), nil
	})
	if err := kc.AppsV1alpha1().PodProbeMarkers(ns).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMarks(ctx, t, f.Client, ns, "p0", "every mark taken off", func(p *corev1.Pod) bool {
		_, label := p.Labels["e2e.kruise.io/idle"]
		_, ann := p.Annotations["e2e.kruise.io/state"]
		_, rec := p.Annotations[nodeprobe.MarksAnnotation]
		return !label && !ann && !rec && podCondition(p, "e2e.kruise.io/idle") == nil
	})
	framework.WaitFor(ctx, t, time.Minute, "the marker gone (finalizer released)", func(ctx context.Context) (bool, string, error) {
		got, err := kc.AppsV1alpha1().PodProbeMarkers(ns).Get(ctx, m.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("finalizers %v", got.Finalizers), nil
	})
	npp, err := kc.AppsV1alpha1().NodePodProbes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err == nil {
		for _, pp := range npp.Spec.PodProbes {
			for _, p := range pp.Probes {
				if pp.UID == string(pod.UID) && strings.HasPrefix(p.Name, m.Name+"#") {
					t.Errorf("NodePodProbe %s still lists probe %s of pod %s", npp.Name, p.Name, pod.Name)
				}
			}
		}
	}
}

// ppmUser is a kruise client acting as user, bound in ns to a Role of rules and always allowed to
// create and read PodProbeMarkers.
func ppmUser(ctx context.Context, t *testing.T, f *framework.Framework, ns, user string, rules ...rbacv1.PolicyRule) versioned.Interface {
	t.Helper()
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"podprobemarkers"},
		Verbs: []string{"create", "get", "list", "update", "patch"}})
	// ejobUser binds and waits the same way; its EphemeralJob rule does no harm here.
	return ejobUser(ctx, t, f, ns, user, rules...)
}

// The refusals, through impersonated users: without pods/exec an exec probe is refused at
// admission (and a TCP one admitted); a forged requester is overwritten at create and at update;
// an update adding an exec probe is judged by its editor; a probe with a host is refused.
func TestPodProbeMarkerRefusals(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "ppm-refuse")
	ppmPod(ctx, t, f, ns, "p0", "ppm-refuse")
	kc := ppmUser(ctx, t, f, ns, "ppm-noexec")
	markers := kc.AppsV1alpha1().PodProbeMarkers(ns)

	_, err := markers.Create(ctx, idleMarker(ns, "exec", "ppm-refuse"), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a user without pods/exec created a PodProbeMarker with an exec probe")
	}
	for _, want := range []string{`admission webhook "vpodprobemarker.kb.io" denied the request`,
		`user "ppm-noexec" may not create pods/exec in namespace "` + ns + `"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refused with %q; want %q", err, want)
		}
	}

	tcp := idleMarker(ns, "tcp", "ppm-refuse")
	tcp.Spec.Probes[0].Probe = appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}}
	tcp.Annotations = map[string]string{nodeprobe.RequesterAnnotation: ejobaccess.Requester{Username: "kubernetes-admin",
		Groups: []string{"system:masters"}}.Encode()}
	created, err := markers.Create(ctx, tcp, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a TCP-only PodProbeMarker refused: %v", err)
	}
	if r, err := nodeprobe.RequesterOf(created.Annotations); err != nil || r.Username != "ppm-noexec" {
		t.Fatalf("requester %+v (%v); want ppm-noexec, the forged one overwritten", r, err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + nodeprobe.RequesterAnnotation + `":"{\"username\":\"kubernetes-admin\"}"}}}`)
	upd, err := markers.Patch(ctx, "tcp", "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := nodeprobe.RequesterOf(upd.Annotations); err != nil || r.Username != "ppm-noexec" {
		t.Fatalf("after the update the requester is %+v (%v); want ppm-noexec", r, err)
	}
	// The TCP probe runs: the user may probe the pod's own port.
	waitMarks(ctx, t, f.Client, ns, "p0", "marked from the TCP probe", idleMarks(true))

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := markers.Get(ctx, "tcp", metav1.GetOptions{}) // kruise-controller adds its finalizer meanwhile
		if err != nil {
			return err
		}
		cur.Spec.Probes[0].Probe = execProbe("true")
		_, err = markers.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "may not create pods/exec") {
		t.Fatalf("an update adding an exec probe by a user without pods/exec: %v; want refused", err)
	}

	host := idleMarker(ns, "host", "ppm-refuse")
	host.Spec.Probes[0].Probe = appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/latest/meta-data", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP, Host: "169.254.169.254"}}}}
	if _, err := markers.Create(ctx, host, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "spec.probes[0].probe.httpGet.host") {
		t.Fatalf("an httpGet probe with a host: %v; want refused naming the field", err)
	}
}

// TCP and HTTP probes, both ways: the pod's own port and path succeed, a closed port and a
// missing path fail, each with a short reason and never a response body.
func TestPodProbeMarkerTCPAndHTTP(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "ppm-net")
	ppmPod(ctx, t, f, ns, "p0", "ppm-net")
	probe := func(name, cond string, h corev1.ProbeHandler) appsv1alpha1.PodContainerProbe {
		return appsv1alpha1.PodContainerProbe{Name: name, ContainerName: "main", PodConditionType: cond,
			Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{PeriodSeconds: 1, ProbeHandler: h}}}
	}
	httpGet := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}}
	}
	tcp := func(port int32) corev1.ProbeHandler {
		return corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}
	}
	createPPM(ctx, t, kc, &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "net", Namespace: ns},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ppm-net"}},
			Probes: []appsv1alpha1.PodContainerProbe{
				probe("http-ok", "e2e.kruise.io/http-ok", httpGet("/healthz")),
				probe("http-missing", "e2e.kruise.io/http-missing", httpGet("/missing")),
				probe("tcp-open", "e2e.kruise.io/tcp-open", tcp(8080)),
				probe("tcp-closed", "e2e.kruise.io/tcp-closed", tcp(8081)),
			},
		},
	})
	want := map[string]corev1.ConditionStatus{"e2e.kruise.io/http-ok": corev1.ConditionTrue, "e2e.kruise.io/http-missing": corev1.ConditionFalse,
		"e2e.kruise.io/tcp-open": corev1.ConditionTrue, "e2e.kruise.io/tcp-closed": corev1.ConditionFalse}
	pod := waitMarks(ctx, t, f.Client, ns, "p0", "the four conditions", func(p *corev1.Pod) bool {
		for typ, status := range want {
			if c := podCondition(p, typ); c == nil || c.Status != status {
				return false
			}
		}
		return true
	})
	for _, typ := range []string{"e2e.kruise.io/http-missing", "e2e.kruise.io/tcp-closed"} {
		c := podCondition(pod, typ)
		if c.Message == "" || len(c.Message) > nodeprobe.MaxMessage || strings.Contains(c.Message, "<html") {
			t.Errorf("condition %s: message %q; want a short reason", typ, c.Message)
		}
	}
	if m := podCondition(pod, "e2e.kruise.io/http-missing").Message; !strings.Contains(m, "404") {
		t.Errorf("a missing path failed with %q; want the HTTP status", m)
	}
}
