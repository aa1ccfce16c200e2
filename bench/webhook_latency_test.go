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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	wlp "github.com/nodekruise/kruise/pkg/webhook/priorityinjection"
)

// podWebhookName is the pod webhook's name in kruise's mutating configuration (deploy/).
const podWebhookName = "mpod.kb.io"

// webhookPods is the number of pods per arm of the webhook benchmark; webhookChunk the pods per
// arm between two switches of the configuration.
var (
	webhookPods  = envInt("BENCH_WEBHOOK_PODS", 100)
	webhookChunk = envInt("BENCH_WEBHOOK_CHUNK", 25)
)

type whArm string

const (
	whNone    whArm = "no pod webhook configured"
	whNotSent whArm = "configured, pod not sent"
	whSent    whArm = "sent, admitted unchanged"
	whMutated whArm = "sent, mutated (barrier)"
)

// whContainers are the arm's two containers: the same program, only the env differs.
func whContainers(a whArm) []ctr {
	switch a {
	case whSent: // marked, but one priority: the webhook answers without a patch
		return []ctr{{"a", priorityEnv("0")}, {"b", priorityEnv("0")}}
	case whMutated: // b waits for a: the webhook adds b's barrier, the controller releases it
		return []ctr{{"a", priorityEnv("1")}, {"b", priorityEnv("0")}}
	}
	return []ctr{{"a", nil}, {"b", nil}}
}

// TestWebhookLatency measures what the pod webhook adds to pod creation: the Create call's own
// latency (admission is inside it) and create → Ready, for pods with no pod webhook configured
// at all, pods the configuration does not send (matchConditions), pods sent and admitted
// unchanged, and pods sent and mutated. It also reads the API server's and the controller's own
// histograms of the webhook call.
func TestWebhookLatency(t *testing.T) {
	ctx := context.Background()
	e := connect(ctx, t, "bench-webhook", "bench-webhook")
	cfgs := e.client.AdmissionregistrationV1().MutatingWebhookConfigurations()

	conf, err := cfgs.Get(ctx, certs.MutatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kruise's pod webhook is not installed (make deploy): %v", err)
	}
	i := slices.IndexFunc(conf.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == podWebhookName })
	if i < 0 {
		t.Fatalf("%s has no webhook %s", conf.Name, podWebhookName)
	}
	sw := &mutatingSwitch{cfgs: cfgs, config: certs.MutatingWebhookConfigurationName, name: podWebhookName, wait: e.waitWebhookPath}
	t.Cleanup(func() {
		if sw.removed {
			if err := sw.restore(context.Background()); err != nil {
				t.Errorf("%v", err)
			}
		}
	})
	remove := func() error { return sw.remove(ctx) }
	restore := func() error { return sw.restore(ctx) }

	samples := map[whArm][]podRun{}
	seq := 0
	run := func(a whArm, timed bool) {
		t.Helper()
		seq++
		name := fmt.Sprintf("%s-%03d", map[whArm]string{whNone: "none", whNotSent: "notsent", whSent: "sent", whMutated: "mutated"}[a], seq)
		r, err := e.runPod(ctx, benchPod(e.ns, name, whContainers(a)), false)
		defer e.deletePod(name)
		if err != nil {
			t.Fatalf("%s (%s): %v", name, a, err)
		}
		// The arm must be what it says: only the mutated pod's b carries a barrier.
		if got, want := hasEnv(r.created, 1, lp.EnvBarrier), a == whMutated; got != want {
			t.Fatalf("%s (%s): container b has %s: %t, want %t", name, a, lp.EnvBarrier, got, want)
		}
		if timed {
			samples[a] = append(samples[a], r)
		}
		t.Logf("%-12s %-27s create %7.2f ms  ready %6.3f s  b-a start %6.3f s", name, a,
			float64(r.createCall.Microseconds())/1000, r.ready.Seconds(), (r.since("b") - r.since("a")).Seconds())
	}

	// Metrics of the configured phases only: the no-webhook phases call nothing.
	var apiCall, apiMatch, ctlHandler histogram
	configured := []whArm{whNotSent, whSent, whMutated}
	for _, a := range append(configured, whNone) {
		if a == whNone {
			if err := remove(); err != nil {
				t.Fatal(err)
			}
		}
		run(a, false) // warm-up
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	for done := 0; done < webhookPods; {
		n := min(webhookChunk, webhookPods-done)
		before, err := e.webhookMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n; k++ {
			for j := range configured {
				run(configured[(done+k+j)%len(configured)], true)
			}
		}
		after, err := e.webhookMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		apiCall = addHist(apiCall, after.apiCall.minus(before.apiCall))
		apiMatch = addHist(apiMatch, after.apiMatch.minus(before.apiMatch))
		ctlHandler = addHist(ctlHandler, after.ctlHandler.minus(before.ctlHandler))

		if err := remove(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < n; k++ {
			run(whNone, true)
		}
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		done += n
	}
	t.Logf("measured in %s", time.Since(start).Round(time.Second))
	reportWebhook(t, samples, apiCall, apiMatch, ctlHandler)
}

// addHist adds two histograms of the same buckets.
func addHist(a, b histogram) histogram {
	if a.buckets == nil {
		return b
	}
	out := histogram{buckets: map[float64]float64{}, sum: a.sum + b.sum, count: a.count + b.count}
	for k, v := range a.buckets {
		out.buckets[k] = v + b.buckets[k]
	}
	return out
}

// webhookHists are the histograms of one reading: the API server's call of the pod webhook
// (round trip: TLS, network, kruise), its evaluation of the webhook's matchConditions, and
// kruise's own handling time summed over the replicas.
type webhookHists struct{ apiCall, apiMatch, ctlHandler histogram }

func (e *env) webhookMetrics(ctx context.Context) (webhookHists, error) {
	var h webhookHists
	raw, err := apiServerMetrics(ctx, e.client)
	if err != nil {
		return h, err
	}
	ours := func(l map[string]string) bool {
		return l["name"] == podWebhookName && l["type"] == "admit" && l["operation"] == "CREATE"
	}
	if h.apiCall, err = parseHistogram(raw, "apiserver_admission_webhook_admission_duration_seconds", ours); err != nil {
		return h, err
	}
	if h.apiMatch, err = parseHistogram(raw, "apiserver_admission_match_condition_evaluation_seconds", ours); err != nil {
		return h, err
	}
	craw, err := controllerMetrics(ctx, e.client)
	if err != nil {
		return h, err
	}
	h.ctlHandler, err = parseHistogram(craw, "kruise_webhook_admission_duration_seconds", func(l map[string]string) bool { return l["webhook"] == wlp.WebhookName })
	return h, err
}

// waitWebhookPath waits until the API server's view of the configuration is the one just
// written: a dry-run Create of a pod that needs a barrier comes back with it (sent) or without
// it (not configured). Dry runs call webhooks whose sideEffects are None, as kruise's is.
func (e *env) waitWebhookPath(ctx context.Context, want bool) error {
	probe := benchPod(e.ns, "dry-run-probe", whContainers(whMutated))
	var got bool
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := e.client.CoreV1().Pods(e.ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil // the webhook's endpoints may still be settling
		}
		got = hasEnv(p, 1, lp.EnvBarrier)
		return got == want, nil
	})
	if err != nil {
		return fmt.Errorf("the API server still %s the pod webhook after a minute (mutated: %t)", map[bool]string{true: "skips", false: "calls"}[want], got)
	}
	return nil
}

func reportWebhook(t *testing.T, samples map[whArm][]podRun, apiCall, apiMatch, ctlHandler histogram) {
	arms := []whArm{whNone, whNotSent, whSent, whMutated}
	pick := func(rs []podRun, f func(podRun) time.Duration) pct { return pcts(rs, f) }
	create := func(r podRun) time.Duration { return r.createCall }
	ready := func(r podRun) time.Duration { return r.ready }
	gap := func(r podRun) time.Duration { return r.since("b") - r.since("a") }
	msd := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	sec := func(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

	var b strings.Builder
	fmt.Fprintf(&b, "\npod Create call and create → Ready (client clock before Create → watch event Ready=True), one pod at a time\n\n")
	fmt.Fprintf(&b, "| arm | n | Create call p50 | p99 | max | create → Ready p50 | p99 | b start − a start p50 (runtime) |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	st := map[whArm][2]pct{}
	for _, a := range arms {
		c, r, g := pick(samples[a], create), pick(samples[a], ready), pick(samples[a], gap)
		st[a] = [2]pct{c, r}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", a, len(samples[a]), msd(c.p50), msd(c.p99), msd(c.max), sec(r.p50), sec(r.p99), sec(g.p50))
	}
	fmt.Fprintf(&b, "\nadded over \"%s\" (same run; p99 is the 99th of %d, nearest rank):\n\n| arm | Create call p50 | p99 | create → Ready p50 | p99 |\n| --- | --- | --- | --- | --- |\n", whNone, len(samples[whNone]))
	base := st[whNone]
	for _, a := range arms[1:] {
		s := st[a]
		fmt.Fprintf(&b, "| %s | %+.2f ms | %+.2f ms | %+.3f s | %+.3f s |\n", a,
			float64((s[0].p50-base[0].p50).Microseconds())/1000, float64((s[0].p99-base[0].p99).Microseconds())/1000,
			(s[1].p50 - base[1].p50).Seconds(), (s[1].p99 - base[1].p99).Seconds())
	}
	fmt.Fprintf(&b, "\nAPI server, webhook %s call (sent arms): %s; ≤ 5 ms: %.1f %%\n", podWebhookName, apiCall.describe(), 100*apiCall.atMost(0.005))
	fmt.Fprintf(&b, "API server, matchConditions of %s (every configured-arm pod): %s\n", podWebhookName, apiMatch.describe())
	fmt.Fprintf(&b, "kruise-controller, %s handling (all replicas): %s; ≤ 5 ms: %.1f %%\n", wlp.WebhookName, ctlHandler.describe(), 100*ctlHandler.atMost(0.005))
	mut := st[whMutated][0].p99 - base[0].p99
	fmt.Fprintf(&b, "\ntarget ≤ 5 ms added at p99 for mutated pods (Create call): %+.2f ms → %s\n",
		float64(mut.Microseconds())/1000, verdict(mut <= 5*time.Millisecond))
	t.Log(b.String())
}
