package priorityinjection

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/webhook/podscope"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// matchSamples are the pods MarkedExpression was evaluated against (see
// TestMarkedExpressionText); Marked must agree with that evaluation.
var matchSamples = []struct {
	name   string
	pod    *corev1.Pod
	marked bool
}{
	{"plain pod", webPod(ctr("a"), ctr("b")), false},
	{"other env vars and annotations", webPod(gen.AddPodAnnotations(map[string]string{"x": "y"}), ctr("a", corev1.EnvVar{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"})), false},
	{"priority env", webPod(ctr("a"), ctr("b", prio("1"))), true},
	{"barrier env", webPod(ctr("a", corev1.EnvVar{Name: lp.EnvBarrier, Value: "x"})), true},
	{"annotation Ordered", webPod(ordered, ctr("a")), true},
	{"annotation with another value", webPod(gen.AddPodAnnotations(map[string]string{lp.AnnotationPriority: "no"}), ctr("a")), true},
	{"priority only in a native sidecar", webPod(nativeSidecar("mesh", prio("1")), ctr("a")), false},
	{"no containers at all", webPod(), false},
}

func TestMarked(t *testing.T) {
	for _, s := range matchSamples {
		assert.Equal(t, s.marked, Marked(s.pod), s.name)
	}
}

// The webhook is called only for marked pods, so an unmarked pod must need
// nothing: Mutate neither patches nor refuses it. Checked on pods drawn from
// every combination of the names that matter.
func TestUnmarkedPodsNeedNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	envNames := []string{"APP", lp.EnvPriority, lp.EnvBarrier, "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT"}
	values := []string{"", "0", "1", "-3", "x", "99999999999"}
	annotations := []map[string]string{nil, {"other": "1"}, {lp.AnnotationPriority: lp.OrderedValue}, {lp.AnnotationPriority: "x"}}
	unmarked, sent := 0, 0
	for range 5000 {
		mods := []gen.PodModifier{gen.AddPodAnnotations(annotations[rng.IntN(len(annotations))])}
		for c := range rng.IntN(4) {
			var env []corev1.EnvVar
			for range rng.IntN(3) {
				env = append(env, corev1.EnvVar{Name: envNames[rng.IntN(len(envNames))], Value: values[rng.IntN(len(values))]})
			}
			if rng.IntN(2) == 0 {
				mods = append(mods, ctr(string(rune('a'+c)), env...))
			} else {
				mods = append(mods, nativeSidecar(string(rune('a'+c)), env...))
			}
		}
		pod := webPod(mods...)
		patch, err := Mutate(Request{Namespace: ns, UID: requestUID, Pod: pod})
		if Marked(pod) {
			sent++
			continue
		}
		unmarked++
		require.NoError(t, err, "%+v", pod.Spec)
		require.Empty(t, patch, "%+v", pod.Spec)
	}
	assert.Greater(t, unmarked, 500)
	assert.Greater(t, sent, 500)
}

// k8s.io/apiserver's CEL (and cel-go) are not in go.mod, so the expression
// is not evaluated here. It was evaluated, with MatchConditions, by the API
// server's own matchconditions package (strict cost, the webhook
// environment) in a module outside this one, against matchSamples plus a
// pod in kube-system and a DELETE: the results equal Marked's, with no
// evaluation error (docs/design/launch-priority.md, "Verifying the match
// conditions"). This test keeps the text in step with the names it tests.
func TestMarkedExpressionText(t *testing.T) {
	for _, name := range []string{lp.AnnotationPriority, lp.EnvPriority, lp.EnvBarrier} {
		assert.Contains(t, MarkedExpression, "'"+name+"'")
	}
	assert.True(t, strings.HasPrefix(MarkedExpression, "object != null && "), "a DELETE (null object) is not an error")
	assert.Contains(t, MarkedExpression, "object.spec.containers.exists(", "init containers are not looked at")
	assert.NotContains(t, MarkedExpression, "initContainers")
	assert.Equal(t, strings.Count(MarkedExpression, "("), strings.Count(MarkedExpression, ")"))
	conds := MatchConditions("kruise-system")
	require.Len(t, conds, 2)
	assert.Equal(t, podscope.Expression("kruise-system"), conds[0].Expression)
	assert.Equal(t, MarkedExpression, conds[1].Expression)
}
