// Package priorityinjection is the admission side of container launch
// priority: Mutate decides, for a pod being created, which containers get
// the barrier env var that holds them back until the barrier controller
// (pkg/controller/launchpriority) releases their priority, or refuses the
// pod with the reasons. It is a pure function of the pod and the request's
// namespace and UID; Review wraps it for an admission.k8s.io/v1 server, and
// MatchConditions are the CEL conditions that send the webhook only the
// pods that can need it. docs/design/launch-priority.md has the design.
package priorityinjection

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
)

// Request is a pod being created.
type Request struct {
	// Namespace is the request's namespace: the pod of a create request
	// may not carry one yet.
	Namespace string
	// UID is the admission request's UID. It draws the name of the barrier
	// ConfigMap of a pod that only has a generateName, so that the webhook
	// called again for the same request (reinvocation) names the same one.
	UID string
	Pod *corev1.Pod
}

// Operation is one RFC 6902 JSON patch operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch is an RFC 6902 JSON patch; empty when the pod is admitted as it is.
type Patch []Operation

// Mutate returns the patch that gives each regular container whose launch
// priority is below the pod's highest the barrier env var of its priority,
// or a *Refusal listing every problem that makes the pod's launch priority
// unknowable or its barrier not kruise's. Pods in kube-system, pods that are
// not marked (see Marked) and pods whose regular containers all have one
// priority get no patch. Mutate does not change the pod, and is idempotent:
// on a pod it has patched it returns no patch.
func Mutate(req Request) (Patch, error) {
	pod := req.Pod
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	if ns == metav1.NamespaceSystem || !Marked(pod) {
		return nil, nil
	}
	prios, errs := lp.Priorities(pod)

	name := configMapName(pod, req.UID)
	need := name != "" && len(errs) == 0 && distinct(prios) > 1
	top := slices.Max(append([]int{lp.MinPriority}, prios...))

	var patch Patch
	var barrierErrs field.ErrorList
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var want *corev1.EnvVar
		if need {
			e := lp.BarrierEnv(name, prios[i])
			want = &e
		}
		has := false
		for j := range c.Env {
			if c.Env[j].Name != lp.EnvBarrier {
				continue
			}
			has = true
			// Only the very env var this admission adds is accepted: the
			// webhook called again on its own output changes nothing.
			if want == nil || !apiequality.Semantic.DeepEqual(c.Env[j], *want) {
				barrierErrs = append(barrierErrs, field.Forbidden(field.NewPath("spec", "containers").Index(i).Child("env").Index(j),
					"container "+strconv.Quote(c.Name)+": "+lp.EnvBarrier+" is reserved: kruise adds it to hold a container back until the containers of higher "+
						lp.EnvPriority+" are Ready; remove it and set "+lp.EnvPriority+" or the pod annotation "+lp.AnnotationPriority+"="+lp.OrderedValue+" instead"))
			}
		}
		if need && !has && prios[i] < top {
			patch = append(patch, addEnv(i, c, *want))
		}
	}
	if len(errs) > 0 || len(barrierErrs) > 0 {
		return nil, newRefusal(errs, barrierErrs)
	}
	return patch, nil
}

// configMapName names the pod's barrier ConfigMap: <name>-barrier, or for a
// pod that only has a generateName (its name is drawn after admission)
// <generateName><token>-barrier; "" for a pod with neither, which the API
// server refuses anyway.
func configMapName(pod *corev1.Pod, uid string) string {
	switch {
	case pod.Name != "":
		return lp.BarrierName(pod.Name)
	case pod.GenerateName != "":
		return lp.GeneratedBarrierName(pod.GenerateName, uid)
	}
	return ""
}

// addEnv appends e to container i's env.
func addEnv(i int, c *corev1.Container, e corev1.EnvVar) Operation {
	path := "/spec/containers/" + strconv.Itoa(i) + "/env"
	if len(c.Env) == 0 {
		return Operation{Op: "add", Path: path, Value: []corev1.EnvVar{e}}
	}
	return Operation{Op: "add", Path: path + "/-", Value: e}
}

// distinct counts the different values of ps.
func distinct(ps []int) int {
	seen := map[int]bool{}
	for _, p := range ps {
		seen[p] = true
	}
	return len(seen)
}
