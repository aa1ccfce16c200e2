package podbudget

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestDecide(t *testing.T) {
	web := Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	counted := func(allowed, current, desired, total int32) gen.PUBModifier {
		return func(b *policyv1alpha1.PodUnavailableBudget) {
			b.Status.UnavailableAllowed, b.Status.CurrentAvailable, b.Status.DesiredAvailable, b.Status.TotalReplicas = allowed, current, desired, total
		}
	}
	recorded := func(field *map[string]metav1.Time, names ...string) {
		*field = map[string]metav1.Time{}
		for _, n := range names {
			(*field)[n] = at(-1)
		}
	}
	perWorkload := gen.AddPUBAnnotations(map[string]string{policyv1alpha1.PubBudgetPerWorkloadAnnotation: "true"})
	for name, tc := range map[string]struct {
		b           *policyv1alpha1.PodUnavailableBudget
		op          policyv1alpha1.PubOperation
		want        Verdict
		reason      string
		disrupted   []string
		unavailable []string
		allowed     int32
	}{
		"charge a delete":    {b: budget(counted(1, 5, 4, 5)), op: policyv1alpha1.PubDeleteOperation, want: Charge, disrupted: []string{"p"}},
		"charge an eviction": {b: budget(counted(2, 5, 3, 5)), op: policyv1alpha1.PubEvictOperation, want: Charge, disrupted: []string{"p"}, allowed: 1},
		"charge a resize":    {b: budget(counted(1, 5, 4, 5)), op: policyv1alpha1.PubResizeOperation, want: Charge, disrupted: []string{"p"}},
		"charge an update":   {b: budget(counted(1, 5, 4, 5)), op: policyv1alpha1.PubUpdateOperation, want: Charge, unavailable: []string{"p"}},
		"no room":            {b: budget(counted(0, 4, 4, 5)), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "PodUnavailableBudget default/web-pub: no more unavailable pods allowed (1 unavailable of maxUnavailable 1; current available 4, desired 4)"},
		// One pod charged since the controller last counted: current still reads 5.
		"no room, charged meanwhile":  {b: budget(counted(0, 5, 4, 5)), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "PodUnavailableBudget default/web-pub: no more unavailable pods allowed (1 unavailable of maxUnavailable 1; current available 5, desired 4)"},
		"no room, minAvailable":       {b: budget(func(b *policyv1alpha1.PodUnavailableBudget) { b.Spec.MaxUnavailable = nil }, gen.SetPUBMinAvailable("80%"), counted(0, 4, 4, 5)), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "PodUnavailableBudget default/web-pub: no more unavailable pods allowed (minAvailable 80%; current available 4, desired 4)"},
		"spec changed since counted":  {b: budget(counted(1, 5, 4, 5), gen.SetPUBGeneration(4), func(b *policyv1alpha1.PodUnavailableBudget) { b.Status.ObservedGeneration = 3 }), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "its spec changed (generation 4) since its status was counted (generation 3)"},
		"counted for this generation": {b: budget(counted(1, 5, 4, 5), func(b *policyv1alpha1.PodUnavailableBudget) { b.Status.ObservedGeneration = 3 }), op: policyv1alpha1.PubDeleteOperation, want: Charge, disrupted: []string{"p"}},
		"nothing to keep":             {b: budget(counted(0, 0, 0, 0)), op: policyv1alpha1.PubDeleteOperation, want: Free},
		"already disrupted":           {b: budget(counted(0, 4, 4, 5), func(b *policyv1alpha1.PodUnavailableBudget) { recorded(&b.Status.DisruptedPods, "p") }), op: policyv1alpha1.PubDeleteOperation, want: Free},
		"already updating":            {b: budget(counted(0, 4, 4, 5), func(b *policyv1alpha1.PodUnavailableBudget) { recorded(&b.Status.UnavailablePods, "p") }), op: policyv1alpha1.PubDeleteOperation, want: Free},
		"too many recorded": {b: budget(counted(9, 5, 4, 5), func(b *policyv1alpha1.PodUnavailableBudget) {
			recorded(&b.Status.DisruptedPods, manyNames(MaxRecorded)...)
		}), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "2000 disruptions are already under way"},
		"workload has no entry":  {b: budget(perWorkload, counted(3, 9, 6, 9)), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "its status has no numbers for Deployment/web yet"},
		"workload has no room":   {b: budget(perWorkload, counted(3, 9, 6, 9), withWorkload("web", 0, 2, 2, 3)), op: policyv1alpha1.PubDeleteOperation, want: Refuse, reason: "(1 unavailable of Deployment/web of maxUnavailable 1; current available 2, desired 2)"},
		"workload keeps nothing": {b: budget(perWorkload, counted(3, 9, 6, 9), withWorkload("web", 0, 0, 0, 0)), op: policyv1alpha1.PubDeleteOperation, want: Free},
		"charge the workload":    {b: budget(perWorkload, counted(3, 9, 6, 9), withWorkload("web", 1, 3, 2, 3)), op: policyv1alpha1.PubDeleteOperation, want: Charge, disrupted: []string{"p"}, allowed: 2},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.b.DeepCopy()
			d := Decide(tc.b, "p", web, tc.op, t0)
			assert.Equal(t, before, tc.b, "the budget is not modified")
			assert.Equal(t, tc.want, d.Verdict)
			assert.Contains(t, d.Reason, tc.reason)
			if tc.want != Charge {
				assert.Nil(t, d.Status)
				return
			}
			assert.Equal(t, tc.allowed, d.Status.UnavailableAllowed)
			assert.Equal(t, names(d.Status.DisruptedPods), tc.disrupted)
			assert.Equal(t, names(d.Status.UnavailablePods), tc.unavailable)
			for _, n := range append(tc.disrupted, tc.unavailable...) {
				assert.Equal(t, t0, recordedAt(d.Status, n))
			}
			if PerWorkload(tc.b) {
				assert.Equal(t, tc.b.Status.Workloads[0].UnavailableAllowed-1, d.Status.Workloads[0].UnavailableAllowed)
			}
		})
	}
}

func withWorkload(name string, allowed, current, desired, total int32) gen.PUBModifier {
	return func(b *policyv1alpha1.PodUnavailableBudget) {
		b.Status.Workloads = append(b.Status.Workloads, policyv1alpha1.WorkloadBudget{Kind: "Deployment", Name: name,
			UnavailableAllowed: allowed, CurrentAvailable: current, DesiredAvailable: desired, TotalReplicas: total})
	}
}

func manyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "pod-" + string(rune(0x4e00+i))
	}
	return out
}

func names(m map[string]metav1.Time) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func recordedAt(st *policyv1alpha1.PodUnavailableBudgetStatus, name string) any {
	if v, ok := st.DisruptedPods[name]; ok {
		return v.Time
	}
	return st.UnavailablePods[name].Time
}
