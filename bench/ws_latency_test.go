//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
)

// wsWebhookName is kruise's WorkloadSpread pod webhook in its mutating configuration (deploy/).
const wsWebhookName = "mworkloadspread.kb.io"

// wsLatPods is the number of samples per arm; wsLatChunk the samples per arm between two
// switches of the configuration.
var (
	wsLatPods  = envInt("BENCH_WS_PODS", 100)
	wsLatChunk = envInt("BENCH_WS_CHUNK", 25)
)

// The arms of each phase (kruise, then OpenKruise v1.9.0 on the same cluster).
const (
	wsNone     = "no WorkloadSpread webhook configured"
	wsFree     = "configured, pod no WorkloadSpread targets"
	wsTargeted = "configured, pod a WorkloadSpread targets"
)

const (
	// wsTarget and wsFreeDeploy are the two Deployments of each phase (replicas 0: the
	// benchmark makes their pods); a WorkloadSpread targets the first.
	wsTarget     = "ws-target"
	wsFreeDeploy = "ws-free"
	// wsNoScheduler keeps the pods Pending: no scheduler of that name runs, so no kubelet
	// starts a container while the next pod is timed.
	wsNoScheduler = "bench-none"
)

// wsSample is one timed Create call.
type wsSample struct {
	impl, arm string
	call      time.Duration
}

// wsPhase is one implementation's namespace: its two Deployments' ReplicaSets, its WorkloadSpread
// and the switch that takes its pod webhook out.
type wsPhase struct {
	e     *env
	impl  string
	ns    string
	timed kubernetes.Interface
	rs    map[string]*appsv1.ReplicaSet // by Deployment
	sw    *mutatingSwitch
	// hook is the webhook name the API server's histograms carry for the phase's pod webhook.
	hook string
}

// TestWSLatency measures what the WorkloadSpread pod webhook adds to pod creation: the Create
// call's latency on the client clock, one pod at a time, for pods a WorkloadSpread targets (the
// webhook places them in a subset, writes the spread's status and injects the subset) and pods
// it does not, against no WorkloadSpread webhook configured, with kruise and then with OpenKruise
// v1.9.0 on the same cluster in the same run. The pods are a Deployment's (owned by its
// ReplicaSet, replicas 0, so kube-controller-manager deletes each as soon as it appears; the
// benchmark deletes it too and waits until it is gone before the next) and stay Pending (a
// scheduler that does not exist). The API server's histograms count the webhook calls: kruise's
// must be called for no pod the WorkloadSpread does not target.
func TestWSLatency(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-ws", "bench-ws")
	build, err := buildOpenKruise(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	cfgs := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	conf, err := cfgs.Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kruise's mutating webhook configuration is not installed (make deploy): %v", err)
	}
	if !slices.ContainsFunc(conf.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == wsWebhookName }) {
		t.Fatalf("%s has no webhook %s: deploy a kruise with the WorkloadSpread webhook", conf.Name, wsWebhookName)
	}
	var samples []wsSample
	var hists []wsHists

	// kruise.
	p := &wsPhase{e: e, impl: "kruise", ns: e.ns, timed: unlimitedClient(t), hook: wsWebhookName}
	p.setup(ctx, t, kruiseWS{e.kruise})
	p.sw = &mutatingSwitch{cfgs: cfgs, config: certs.MutatingWebhookConfigurationName, name: wsWebhookName, wait: p.waitWebhook}
	t.Cleanup(func() {
		if p.sw.removed {
			if err := p.sw.restore(context.Background()); err != nil {
				t.Errorf("%v", err)
			}
		}
	})
	start := time.Now()
	s, h := p.run(ctx, t, true)
	samples, hists = append(samples, s...), append(hists, h...)
	// The WorkloadSpread goes before the OpenKruise phase replaces the CRD.
	if err := e.kruise.AppsV1alpha1().WorkloadSpreads(e.ns).Delete(ctx, wsTarget, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("kruise phase: %s", time.Since(start).Round(time.Second))

	// OpenKruise v1.9.0: its own WorkloadSpread CRD (ws_openkruise_test.go), kruise-controller at
	// 0 and its webhooks keeping out of the phase's namespace.
	start = time.Now()
	ok, err := e.startOpenKruiseWith(ctx, t, build, okOptions{
		gates:             "KruiseDaemon=false,EnableExternalCerts=true,WorkloadSpread=true,PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false",
		controllers:       []string{"container-launch-priority-controller", okWSController},
		exclude:           []string{wsWebhookName},
		excludeValidating: []string{"vworkloadspread.kb.io", "vworkloadspread-pod.kb.io", "vworkloadspread-eviction.kb.io"},
		before:            []func(*openKruise) startStep{okWSCRD},
	})
	t.Cleanup(func() {
		if ok == nil {
			return
		}
		if err := ok.stop(context.Background()); err != nil {
			t.Errorf("after the OpenKruise phase: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", envStr("KUBECONFIG", ""))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := &wsPhase{e: e, impl: "OpenKruise v1.9.0", ns: ok.ns, timed: p.timed, hook: okWebhookName}
	q.setup(ctx, t, okWS{dyn})
	q.sw = &mutatingSwitch{cfgs: cfgs, config: okConfigName, name: okWebhookName, wait: q.waitWebhook}
	t.Cleanup(func() {
		if q.sw.removed {
			if err := q.sw.restore(context.Background()); err != nil {
				t.Errorf("%v", err)
			}
		}
	})
	s, h = q.run(ctx, t, false)
	samples, hists = append(samples, s...), append(hists, h...)
	t.Logf("OpenKruise phase: %s (set-up included)", time.Since(start).Round(time.Second))
	start = time.Now()
	err = ok.stop(ctx)
	ok = nil
	if err != nil {
		t.Errorf("after the OpenKruise phase: %v", err)
	}
	t.Logf("OpenKruise phase undone, kruise-controller leading again: %s", time.Since(start).Round(time.Second))
	reportWS(t, samples, hists)
}

// setup creates the phase's Deployments and WorkloadSpread (with api) and waits until a
// targeted pod is placed.
func (p *wsPhase) setup(ctx context.Context, t *testing.T, api wsAPI) {
	t.Helper()
	p.rs = map[string]*appsv1.ReplicaSet{}
	for _, d := range []string{wsTarget, wsFreeDeploy} {
		labels := map[string]string{"app": d}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: d, Namespace: p.ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						SchedulerName: wsNoScheduler,
						Containers:    []corev1.Container{{Name: "main", Image: image}},
					},
				},
			},
		}
		created, err := p.e.client.AppsV1().Deployments(p.ns).Create(ctx, dep, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			l, err := p.e.client.AppsV1().ReplicaSets(p.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d})
			if err != nil {
				return false, nil
			}
			for i := range l.Items {
				if o := metav1.GetControllerOf(&l.Items[i]); o != nil && o.UID == created.UID {
					p.rs[d] = &l.Items[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("the ReplicaSet of Deployment %s/%s: %v", p.ns, d, err)
		}
	}
	ws := &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: wsTarget, Namespace: p.ns},
		Spec: appsv1alpha1.WorkloadSpreadSpec{
			TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: wsTarget},
			Subsets: []appsv1alpha1.WorkloadSpreadSubset{
				{Name: "zone-a", RequiredNodeSelectorTerm: ptr.To(wsZoneTerm("zone-a")), MaxReplicas: ptr.To(intstr.FromInt32(1000))},
				{Name: "zone-b", RequiredNodeSelectorTerm: ptr.To(wsZoneTerm("zone-b"))},
			},
		},
	}
	// Right after a deploy the validation webhook may still be reached through an old endpoint.
	var err error
	werr := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err = api.create(ctx, ws.DeepCopy())
		return err == nil, nil
	})
	if werr != nil {
		t.Fatalf("creating WorkloadSpread %s/%s: %v", p.ns, ws.Name, err)
	}
	if err := p.waitWebhook(ctx, true); err != nil {
		t.Fatal(err)
	}
}

// pod is a new pod of Deployment d's ReplicaSet, as the ReplicaSet would make it.
func (p *wsPhase) pod(d string) *corev1.Pod {
	rs := p.rs[d]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: rs.Name + "-", Namespace: p.ns, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: *rs.Spec.Template.Spec.DeepCopy(),
	}
}

// placed says whether the webhook put pod in a subset of the phase's WorkloadSpread.
func placed(pod *corev1.Pod) bool {
	return strings.Contains(pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation], `"name":"`+wsTarget+`"`)
}

// create creates a pod of Deployment d, times the call, checks its placement against want,
// deletes it and waits until it is gone.
func (p *wsPhase) create(ctx context.Context, d string, want bool) (time.Duration, error) {
	t0 := time.Now()
	created, err := p.timed.CoreV1().Pods(p.ns).Create(ctx, p.pod(d), metav1.CreateOptions{})
	call := time.Since(t0)
	if err != nil {
		return call, err
	}
	defer p.e.deletePodIn(p.ns, created.Name)
	if got := placed(created); got != want {
		return call, fmt.Errorf("pod %s of %s: placed by the WorkloadSpread %t, want %t (annotations %v)", created.Name, d, got, want, created.Annotations)
	}
	return call, nil
}

// waitWebhook waits until a targeted pod is placed (configured) or not (removed).
func (p *wsPhase) waitWebhook(ctx context.Context, configured bool) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = p.create(ctx, wsTarget, configured)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: the API server does not show the WorkloadSpread webhook %s (last: %v)",
			p.impl, map[bool]string{true: "configured", false: "removed"}[configured], last)
	}
	return nil
}

// run times the phase's arms: blocks of wsLatChunk rounds of the configured arms (taking turns),
// then as many pods with the webhook removed, until wsLatPods each. withKruise reads kruise's
// own histograms too.
func (p *wsPhase) run(ctx context.Context, t *testing.T, withKruise bool) ([]wsSample, []wsHists) {
	t.Helper()
	var out []wsSample
	sample := func(arm string, timed bool) {
		t.Helper()
		d, want := wsTarget, arm == wsTargeted
		if arm == wsFree {
			d = wsFreeDeploy
		}
		call, err := p.create(ctx, d, want)
		if err != nil {
			t.Fatalf("%s, %s: %v", p.impl, arm, err)
		}
		if timed {
			out = append(out, wsSample{p.impl, arm, call})
		}
	}
	configured := []string{wsFree, wsTargeted}
	for _, a := range configured {
		sample(a, false) // warm-up
	}
	conf, none := wsHists{impl: p.impl, block: "configured"}, wsHists{impl: p.impl, block: wsNone}
	read := func() wsHists {
		h, err := p.metrics(ctx, withKruise)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for done := 0; done < wsLatPods; {
		n := min(wsLatChunk, wsLatPods-done)
		before := read()
		for k := range n {
			for j := range configured {
				sample(configured[(done+k+j)%len(configured)], true)
			}
		}
		conf = conf.add(read().minus(before))
		if err := p.sw.remove(ctx); err != nil {
			t.Fatal(err)
		}
		before = read()
		for range n {
			sample(wsNone, true)
		}
		none = none.add(read().minus(before))
		if err := p.sw.restore(ctx); err != nil {
			t.Fatal(err)
		}
		done += n
	}
	return out, []wsHists{conf, none}
}

// wsHists are the histograms of one kind of block: the API server's calls of the phase's pod
// webhook on CREATE and its evaluation of the webhook's matchConditions; kruise's own handling
// by webhook (kruise's phase only).
type wsHists struct {
	impl, block         string
	call, match, kruise map[string]histogram
}

func (p *wsPhase) metrics(ctx context.Context, withKruise bool) (wsHists, error) {
	h := wsHists{impl: p.impl}
	raw, err := apiServerMetrics(ctx, p.e.client)
	if err != nil {
		return h, err
	}
	ours := func(l map[string]string) bool { return l["name"] == p.hook }
	if h.call, err = histogramsBy(raw, "apiserver_admission_webhook_admission_duration_seconds", []string{"name", "operation", "rejected"},
		func(l map[string]string) bool { return ours(l) && l["operation"] == "CREATE" }); err != nil {
		return h, err
	}
	if h.match, err = histogramsBy(raw, "apiserver_admission_match_condition_evaluation_seconds", []string{"name"}, ours); err != nil {
		return h, err
	}
	if !withKruise {
		return h, nil
	}
	craw, err := controllerMetrics(ctx, p.e.client)
	if err != nil {
		return h, err
	}
	h.kruise, err = histogramsBy(craw, "kruise_webhook_admission_duration_seconds", []string{"webhook"}, func(map[string]string) bool { return true })
	return h, err
}

func (h wsHists) minus(before wsHists) wsHists {
	sub := func(a, b map[string]histogram) map[string]histogram {
		out := map[string]histogram{}
		for k, v := range a {
			out[k] = v.minus(b[k])
		}
		return out
	}
	return wsHists{h.impl, h.block, sub(h.call, before.call), sub(h.match, before.match), sub(h.kruise, before.kruise)}
}

func (h wsHists) add(o wsHists) wsHists {
	sum := func(a, b map[string]histogram) map[string]histogram {
		out := map[string]histogram{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = addHist(out[k], v)
		}
		return out
	}
	return wsHists{h.impl, h.block, sum(h.call, o.call), sum(h.match, o.match), sum(h.kruise, o.kruise)}
}

func reportWS(t *testing.T, samples []wsSample, hists []wsHists) {
	msd := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	plus := func(d time.Duration) string { return fmt.Sprintf("%+.2f ms", float64(d.Microseconds())/1000) }
	stat := func(impl, arm string) (pct, int) {
		var ds []time.Duration
		for _, s := range samples {
			if s.impl == impl && s.arm == arm {
				ds = append(ds, s.call)
			}
		}
		if len(ds) == 0 {
			return pct{}, 0
		}
		slices.Sort(ds)
		return pct{percentile(ds, 0.5), percentile(ds, 0.99), ds[0], ds[len(ds)-1]}, len(ds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npod Create call (client clock), one pod at a time; p99 nearest rank; added over the same phase's %q\n\n", wsNone)
	fmt.Fprintf(&b, "| implementation | arm | n | p50 | p99 | max | added p50 | added p99 |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	added := map[string][2]time.Duration{}
	for _, impl := range []string{"kruise", "OpenKruise v1.9.0"} {
		base, _ := stat(impl, wsNone)
		for _, arm := range []string{wsNone, wsFree, wsTargeted} {
			s, n := stat(impl, arm)
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", impl, arm, n, msd(s.p50), msd(s.p99), msd(s.max),
				plus(s.p50-base.p50), plus(s.p99-base.p99))
			added[impl+" "+arm] = [2]time.Duration{s.p50 - base.p50, s.p99 - base.p99}
		}
	}
	ratio := func(a, b time.Duration) string {
		if b <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", float64(a)/float64(b))
	}
	for _, arm := range []string{wsFree, wsTargeted} {
		k, o := added["kruise "+arm], added["OpenKruise v1.9.0 "+arm]
		fmt.Fprintf(&b, "\n%s: added p50 kruise %s vs OpenKruise %s (ratio %s); p99 %s vs %s", arm, plus(k[0]), plus(o[0]), ratio(k[0], o[0]), plus(k[1]), plus(o[1]))
	}
	fmt.Fprintf(&b, "\n\nhistograms (API server: webhook calls on CREATE and matchConditions; kruise: handling by webhook, both replicas):\n")
	for _, h := range hists {
		for _, k := range sortedKeys(h.call) {
			fmt.Fprintf(&b, "  %s, %s blocks, API server call %s: %s\n", h.impl, h.block, k, h.call[k].describe())
		}
		for _, k := range sortedKeys(h.match) {
			fmt.Fprintf(&b, "  %s, %s blocks, API server matchConditions %s: %s\n", h.impl, h.block, k, h.match[k].describe())
		}
		for _, k := range sortedKeys(h.kruise) {
			if h.kruise[k].count > 0 {
				fmt.Fprintf(&b, "  %s, %s blocks, kruise %s: %s; ≤ 5 ms: %.1f %%\n", h.impl, h.block, k, h.kruise[k].describe(), 100*h.kruise[k].atMost(0.005))
			}
		}
	}
	// kruise's webhook is called for the targeted pods (and the probes of the switches: none in
	// the configured blocks) and never for the others.
	_, targeted := stat("kruise", wsTargeted)
	calls := 0.0
	for _, h := range hists {
		if h.impl == "kruise" && h.block == "configured" {
			for _, v := range h.call {
				calls += v.count
			}
		}
	}
	extra := calls - float64(targeted)
	fmt.Fprintf(&b, "\nkruise: %s calls in the configured blocks %.0f for %d targeted pods: %.0f for pods no WorkloadSpread targets\n", wsWebhookName, calls, targeted, extra)
	free := added["kruise "+wsFree]
	fmt.Fprintf(&b, "target: nothing added for pods no WorkloadSpread targets: %s at p50, %s at p99, %.0f webhook calls → %s\n",
		plus(free[0]), plus(free[1]), extra, verdict(extra == 0 && free[0] <= time.Millisecond/2))
	t.Log(b.String())
	if extra != 0 {
		t.Errorf("the API server called %s %.0f times for pods no WorkloadSpread targets", wsWebhookName, extra)
	}
}
