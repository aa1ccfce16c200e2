//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/webhook/certs"
)

// pubSwitch removes the budget webhooks from kruise's validating configuration and puts them
// back exactly (same entries, same places).
type pubSwitch struct {
	b     *pubBench
	probe string // a ready pod of the exhausted budget
	cfgs  admissionv1client.ValidatingWebhookConfigurationInterface
	saved []savedWebhook
	// removed: the entries are out and must be put back.
	removed bool
}

type savedWebhook struct {
	index int
	w     admissionregistrationv1.ValidatingWebhook
}

func pubWebhook(name string) bool { return name == pubPodWebhook || name == pubEvictWebhook }

func (s *pubSwitch) save(ctx context.Context) error {
	c, err := s.cfgs.Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i, w := range c.Webhooks {
		if pubWebhook(w.Name) {
			s.saved = append(s.saved, savedWebhook{i, *w.DeepCopy()})
		}
	}
	return nil
}

func (s *pubSwitch) remove(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.cfgs.Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Webhooks = slices.DeleteFunc(c.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return pubWebhook(w.Name) })
		_, err = s.cfgs.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing webhooks %s and %s: %w", pubPodWebhook, pubEvictWebhook, err)
	}
	s.removed = true
	return s.wait(ctx, false)
}

// restore puts each saved entry back at its index (in order, so the indexes are the original
// ones), unless one of that name is there already.
func (s *pubSwitch) restore(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.cfgs.Get(ctx, certs.ValidatingWebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, sw := range s.saved {
			if slices.ContainsFunc(c.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == sw.w.Name }) {
				continue
			}
			c.Webhooks = slices.Insert(c.Webhooks, min(sw.index, len(c.Webhooks)), *sw.w.DeepCopy())
		}
		_, err = s.cfgs.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("restoring webhooks %s and %s: %w", pubPodWebhook, pubEvictWebhook, err)
	}
	s.removed = false
	return s.wait(ctx, true)
}

// wait waits until the API server's view of the configuration is the one just written: a
// dry-run DELETE and a dry-run eviction of the exhausted budget's pod fail (configured: refused,
// or refused as a dry run the webhook does not support) or succeed (not configured).
func (s *pubSwitch) wait(ctx context.Context, configured bool) error {
	var del, ev error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		dry := []string{metav1.DryRunAll}
		del = s.b.call(ctx, pubDelete, s.probe, dry)
		ev = s.b.call(ctx, pubEvict, s.probe, dry)
		return (del != nil) == configured && (ev != nil) == configured, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not show the budget webhooks %s after a minute (dry-run DELETE: %v; eviction: %v)",
			map[bool]string{true: "configured", false: "removed"}[configured], del, ev)
	}
	return nil
}

// renewNodeLease keeps node's Lease in kube-node-lease renewed every 10 s until ctx ends, as a
// kubelet does.
func renewNodeLease(ctx context.Context, client kubernetes.Interface, node string, uid types.UID) {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	for {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, _ = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: uid}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
			}, metav1.CreateOptions{})
		case err == nil:
			l.Spec.RenewTime = &now
			_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// pubHists are the histograms of one reading, keyed by their labels: the API server's calls of
// the two webhooks (round trip) by name, operation and rejected; its evaluation of their
// matchConditions by name; kruise's own handling time by webhook, summed over the replicas; and
// the API server's own time for pod DELETEs and eviction POSTs (apiserver_request_duration_seconds,
// not dry runs) by verb and subresource.
type pubHists struct{ api, match, kruise, server map[string]histogram }

func (b *pubBench) metrics(ctx context.Context) (pubHists, error) {
	var h pubHists
	raw, err := apiServerMetrics(ctx, b.e.client)
	if err != nil {
		return h, err
	}
	ours := func(l map[string]string) bool { return pubWebhook(l["name"]) }
	if h.api, err = histogramsBy(raw, "apiserver_admission_webhook_admission_duration_seconds", []string{"name", "operation", "rejected"}, ours); err != nil {
		return h, err
	}
	if h.match, err = histogramsBy(raw, "apiserver_admission_match_condition_evaluation_seconds", []string{"name"}, ours); err != nil {
		return h, err
	}
	craw, err := controllerMetrics(ctx, b.e.client)
	if err != nil {
		return h, err
	}
	if h.kruise, err = histogramsBy(craw, "kruise_webhook_admission_duration_seconds", []string{"webhook"}, func(map[string]string) bool { return true }); err != nil {
		return h, err
	}
	h.server, err = histogramsBy(raw, "apiserver_request_duration_seconds", []string{"verb", "subresource"}, func(l map[string]string) bool {
		return l["resource"] == "pods" && l["group"] == "" && l["dry_run"] == "" &&
			((l["verb"] == "DELETE" && l["subresource"] == "") || (l["verb"] == "POST" && l["subresource"] == "eviction"))
	})
	return h, err
}

// histogramsBy reads histogram name's series that keep accepts, summed by the values of keys
// (joined by spaces).
func histogramsBy(raw []byte, name string, keys []string, keep func(map[string]string) bool) (map[string]histogram, error) {
	key := func(l map[string]string) string {
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + l[k]
		}
		return strings.Join(parts, " ")
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_count{") {
			continue
		}
		l := map[string]string{}
		for _, kv := range promLabel.FindAllStringSubmatch(line, -1) {
			l[kv[1]] = kv[2]
		}
		if keep(l) {
			seen[key(l)] = true
		}
	}
	out := map[string]histogram{}
	for k := range seen {
		h, err := parseHistogram(raw, name, func(l map[string]string) bool { return keep(l) && key(l) == k })
		if err != nil {
			return nil, err
		}
		out[k] = h
	}
	return out, sc.Err()
}

func (h pubHists) minus(before pubHists) pubHists {
	sub := func(a, b map[string]histogram) map[string]histogram {
		out := map[string]histogram{}
		for k, v := range a {
			out[k] = v.minus(b[k])
		}
		return out
	}
	return pubHists{sub(h.api, before.api), sub(h.match, before.match), sub(h.kruise, before.kruise), sub(h.server, before.server)}
}

func (h pubHists) add(o pubHists) pubHists {
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
	return pubHists{sum(h.api, o.api), sum(h.match, o.match), sum(h.kruise, o.kruise), sum(h.server, o.server)}
}

// chargeWrites counts, per arm and operation, the samples during whose call kruise-controller
// wrote a budget's status (the audit log's Metadata events of kruise's service accounts): the
// charged arm's admission writes its charge inside the call, the others write nothing (a write
// of the status controller that falls inside a call by chance counts too).
type chargeWrites map[pubArm]map[pubOp]int

func chargesInCalls(samples []pubSample, ns string) (chargeWrites, error) {
	if len(samples) == 0 {
		return nil, nil
	}
	from, to := samples[0].t0, samples[0].t1
	for _, s := range samples {
		from, to = minTime(from, s.t0), maxTime(to, s.t1)
	}
	events, err := auditRequests(from, to.Add(time.Millisecond), func(e *auditEvent) bool {
		r := e.ObjectRef
		return e.User.Username == controllerUser && r != nil && r.Resource == "podunavailablebudgets" && r.Subresource == "status" &&
			r.Namespace == ns && (e.Verb == "update" || e.Verb == "patch") && e.ResponseStatus != nil && e.ResponseStatus.Code < 300
	})
	if err != nil {
		return nil, err
	}
	out := chargeWrites{}
	for _, s := range samples {
		if out[s.arm] == nil {
			out[s.arm] = map[pubOp]int{}
		}
		i := sort.Search(len(events), func(i int) bool { return !events[i].RequestReceived.Before(s.t0) })
		if i < len(events) && events[i].RequestReceived.Before(s.t1) {
			out[s.arm][s.op]++
		}
	}
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func reportPUB(t *testing.T, samples []pubSample, m, mNone pubHists, charges chargeWrites) {
	arms := []pubArm{pubNone, pubNotSent, pubCharged, pubRefused}
	msd := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	plus := func(d time.Duration) string { return fmt.Sprintf("%+.2f ms", float64(d.Microseconds())/1000) }
	stat := func(a pubArm, op pubOp) (pct, int) {
		var ds []time.Duration
		for _, s := range samples {
			if s.arm == a && s.op == op {
				ds = append(ds, s.call())
			}
		}
		if len(ds) == 0 {
			return pct{}, 0
		}
		slices.Sort(ds)
		return pct{percentile(ds, 0.5), percentile(ds, 0.99), ds[0], ds[len(ds)-1]}, len(ds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nthe call's latency (client clock around Delete / Eviction create), one pod at a time; p99 nearest rank\n")
	verdicts := map[pubOp]time.Duration{}
	for _, op := range []pubOp{pubDelete, pubEvict} {
		base, _ := stat(pubNone, op)
		fmt.Fprintf(&b, "\n%s\n\n| arm | n | p50 | p99 | max | added p50 | added p99 | status writes inside the call |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", op)
		for _, a := range arms {
			s, n := stat(a, op)
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d |\n", a, n, msd(s.p50), msd(s.p99), msd(s.max),
				plus(s.p50-base.p50), plus(s.p99-base.p99), charges[a][op])
		}
		ns, _ := stat(pubNotSent, op)
		verdicts[op] = ns.p50 - base.p50
	}

	fmt.Fprintf(&b, "\nAPI server, webhook calls during the configured blocks (round trip: TLS, network, kruise):\n")
	for _, k := range sortedKeys(m.api) {
		fmt.Fprintf(&b, "  %s: %s\n", k, m.api[k].describe())
	}
	fmt.Fprintf(&b, "API server, matchConditions evaluation (every pod of the configured blocks):\n")
	for _, k := range sortedKeys(m.match) {
		fmt.Fprintf(&b, "  %s: %s\n", k, m.match[k].describe())
	}
	fmt.Fprintf(&b, "API server, its own time for the calls (apiserver_request_duration_seconds), configured blocks (arms b, c, d together):\n")
	for _, k := range sortedKeys(m.server) {
		fmt.Fprintf(&b, "  %s: %s\n", k, m.server[k].describe())
	}
	fmt.Fprintf(&b, "API server, its own time for the calls, blocks with no budget webhook configured (arm a):\n")
	for _, k := range sortedKeys(mNone.server) {
		fmt.Fprintf(&b, "  %s: %s\n", k, mNone.server[k].describe())
	}
	fmt.Fprintf(&b, "kruise-controller, handling by webhook (all replicas; webhooks with no request in the configured blocks left out):\n")
	for _, k := range sortedKeys(m.kruise) {
		if m.kruise[k].count > 0 {
			fmt.Fprintf(&b, "  %s: %s; ≤ 5 ms: %.1f %%\n", k, m.kruise[k].describe(), 100*m.kruise[k].atMost(0.005))
		}
	}

	// Each covered pod's call is one webhook call; a pod no budget covers must cause none.
	// (UPDATEs of covered pods, the benchmark's status writes among them, may be sent too: not
	// counted here.)
	calls := map[string]float64{}
	for k, h := range m.api {
		f := strings.Fields(k)
		calls[f[0]+" "+f[1]] += h.count
	}
	_, delCharged := stat(pubCharged, pubDelete)
	_, delRefused := stat(pubRefused, pubDelete)
	_, evCharged := stat(pubCharged, pubEvict)
	_, evRefused := stat(pubRefused, pubEvict)
	extraDel := calls["name="+pubPodWebhook+" operation=DELETE"] - float64(delCharged+delRefused)
	extraEv := calls["name="+pubEvictWebhook+" operation=CREATE"] - float64(evCharged+evRefused)
	fmt.Fprintf(&b, "\ncalls beyond the covered pods' (pods no budget covers that were sent): %s %.0f, %s %.0f\n",
		pubPodWebhook, extraDel, pubEvictWebhook, extraEv)
	for _, op := range []pubOp{pubDelete, pubEvict} {
		fmt.Fprintf(&b, "target: nothing added for pods no budget covers (%s): p50 %s over no webhook configured → %s\n",
			op, plus(verdicts[op]), verdict(extraDel == 0 && extraEv == 0 && verdicts[op] <= time.Millisecond/2))
	}
	t.Log(b.String())
	if extraDel != 0 || extraEv != 0 {
		t.Errorf("the API server called the budget webhooks %.0f (DELETE) and %.0f (eviction) times beyond the covered pods' calls", extraDel, extraEv)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
