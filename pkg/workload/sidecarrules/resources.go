package sidecarrules

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// PolicyResources computes the limits and requests a sidecar with resourcesPolicy p gets in pod,
// as OpenKruise does when the pod is created:
//
//   - the targets are the pod's containers and native sidecars whose names match
//     targetContainersNameRegex (unanchored), less those injected (names in injected, every
//     container of every SidecarSet injecting into the pod); none is an error;
//   - per resource (cpu, memory), the targets' values are added up (sum) or the largest is taken
//     (max); a target without a limit makes the limit unlimited, a target without a request
//     counts 0;
//   - each expression of resourcesExpr sets its resource: a limit expression only when the
//     combined limit is not unlimited (else the sidecar gets no such limit), a request
//     expression always (0 included).
//
// A request above the limit computed beside it is an error, rather than a pod the API server
// refuses with a message that does not name the policy.
func PolicyResources(pod *corev1.Pod, p *appsv1beta1.ResourcesPolicy, injected map[string]bool) (limits, requests corev1.ResourceList, err error) {
	targets, err := policyTargets(pod, p.TargetContainersNameRegex, injected)
	if err != nil {
		return nil, nil, err
	}
	combinedLimits, combinedRequests, err := combine(targets, p.TargetContainersMode)
	if err != nil {
		return nil, nil, err
	}
	if l := p.ResourcesExpr.Limits; l != nil {
		limits = corev1.ResourceList{}
		for _, x := range []resourceExprField{{corev1.ResourceCPU, "limits.cpu", l.CPU}, {corev1.ResourceMemory, "limits.memory", l.Memory}} {
			v, ok := combinedLimits[x.name]
			if x.src == "" || !ok {
				continue
			}
			if limits[x.name], err = x.evaluate(v); err != nil {
				return nil, nil, err
			}
		}
	}
	if r := p.ResourcesExpr.Requests; r != nil {
		requests = corev1.ResourceList{}
		for _, x := range []resourceExprField{{corev1.ResourceCPU, "requests.cpu", r.CPU}, {corev1.ResourceMemory, "requests.memory", r.Memory}} {
			if x.src == "" {
				continue
			}
			if requests[x.name], err = x.evaluate(combinedRequests[x.name]); err != nil {
				return nil, nil, err
			}
		}
	}
	for name, req := range requests {
		if limit, ok := limits[name]; ok && req.Cmp(limit) > 0 {
			return nil, nil, fmt.Errorf("the %s request %s is above the %s limit %s", name, req.String(), name, limit.String())
		}
	}
	if len(limits) == 0 {
		limits = nil
	}
	if len(requests) == 0 {
		requests = nil
	}
	return limits, requests, nil
}

// resourceExprField is one expression of resourcesExpr.
type resourceExprField struct {
	name corev1.ResourceName
	path string
	src  string
}

func (x resourceExprField) evaluate(combined resource.Quantity) (resource.Quantity, error) {
	e, err := ParseResourceExpr(x.src, string(x.name))
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("resourcesExpr.%s %q: %w", x.path, x.src, err)
	}
	v, err := e.Evaluate(combined)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("resourcesExpr.%s %q with %s %s: %w", x.path, x.src, x.name, combined.String(), err)
	}
	return v, nil
}

// policyTargets are the containers of pod a resourcesPolicy reads: native sidecars first, then
// containers, those named by injected left out. Run-once init containers never count.
func policyTargets(pod *corev1.Pod, pattern string, injected map[string]bool) ([]*corev1.Container, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("targetContainersNameRegex %q: %w", pattern, err)
	}
	var targets []*corev1.Container
	add := func(c *corev1.Container) {
		if !injected[c.Name] && re.MatchString(c.Name) {
			targets = append(targets, c)
		}
	}
	for i := range pod.Spec.InitContainers {
		if IsNative(pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	if len(targets) == 0 {
		var names []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		return nil, fmt.Errorf("no container of the pod (%s) matches targetContainersNameRegex %q", strings.Join(names, ", "), pattern)
	}
	return targets, nil
}

// combine adds up (sum) or takes the largest (max) of the targets' cpu and memory. A limit is
// left out when a target has none (unlimited); a missing request counts 0.
func combine(targets []*corev1.Container, mode appsv1beta1.TargetContainersModeType) (limits, requests corev1.ResourceList, err error) {
	var join func(acc *resource.Quantity, v resource.Quantity)
	switch mode {
	case appsv1beta1.TargetContainersModeSum:
		join = func(acc *resource.Quantity, v resource.Quantity) { acc.Add(v) }
	case appsv1beta1.TargetContainersModeMax:
		join = func(acc *resource.Quantity, v resource.Quantity) {
			if acc.IsZero() || v.Cmp(*acc) > 0 {
				*acc = v.DeepCopy()
			}
		}
	default:
		return nil, nil, fmt.Errorf("targetContainersMode %q is neither sum nor max", mode)
	}
	limits, requests = corev1.ResourceList{}, corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		limit, request := resource.NewQuantity(0, resource.DecimalSI), resource.NewQuantity(0, resource.DecimalSI)
		unlimited := false
		for _, c := range targets {
			if v, ok := c.Resources.Limits[name]; ok {
				join(limit, v)
			} else {
				unlimited = true
			}
			if v, ok := c.Resources.Requests[name]; ok {
				join(request, v)
			}
		}
		if !unlimited {
			limits[name] = *limit
		}
		requests[name] = *request
	}
	return limits, requests, nil
}
