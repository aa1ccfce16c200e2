package validate

import (
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appspub "github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// reservedProbeNames are the probe names OpenKruise refuses: the pod condition types the kubelet
// and kruise's workloads own.
var reservedProbeNames = map[string]bool{
	string(corev1.PodScheduled): true, string(corev1.PodInitialized): true, string(corev1.PodReady): true,
	string(corev1.ContainersReady): true, string(appspub.KruisePodReady): true, string(appspub.InPlaceUpdateReady): true,
}

// checkPodProbeMarker is what OpenKruise v1.9.0 refuses in a PodProbeMarker's spec (and, with old,
// a changed selector), each problem with its path. selector errors come apart, for the reason.
func checkPodProbeMarker(spec, old *appsv1alpha1.PodProbeMarkerSpec) (selector, probes field.ErrorList) {
	spath := field.NewPath("spec")
	switch {
	case spec.Selector == nil:
		selector = append(selector, field.Required(spath.Child("selector"), "the pods to probe"))
	default:
		selector = append(selector, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, spath.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			selector = append(selector, field.Invalid(spath.Child("selector"), spec.Selector, "must not be empty: it would select every pod of the namespace"))
		}
	}
	if old != nil && !apiequality.Semantic.DeepEqual(old.Selector, spec.Selector) {
		selector = append(selector, field.Forbidden(spath.Child("selector"), "may not change: create another PodProbeMarker"))
	}
	ppath := spath.Child("probes")
	if len(spec.Probes) == 0 {
		return selector, append(probes, field.Required(ppath, "at least one probe"))
	}
	names, conditions := map[string]bool{}, map[string]bool{}
	for i := range spec.Probes {
		probes = append(probes, checkContainerProbe(ppath.Index(i), &spec.Probes[i], names, conditions)...)
	}
	return selector, probes
}

func checkContainerProbe(path *field.Path, p *appsv1alpha1.PodContainerProbe, names, conditions map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case strings.Contains(p.Name, "#"):
		errs = append(errs, field.Invalid(path.Child("name"), p.Name, "must not contain '#' (it separates the marker's name from the probe's on the nodes)"))
	case reservedProbeNames[p.Name]:
		errs = append(errs, field.Invalid(path.Child("name"), p.Name, "must not be a pod condition type the kubelet or kruise owns"))
	case names[p.Name]:
		errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
	}
	names[p.Name] = true
	if p.ContainerName == "" {
		errs = append(errs, field.Required(path.Child("containerName"), "the container the probe runs in or against"))
	}
	errs = append(errs, checkProbe(path.Child("probe"), &p.Probe.Probe)...)
	if p.PodConditionType == "" && len(p.MarkerPolicy) == 0 {
		errs = append(errs, field.Required(path, "podConditionType or markerPolicy: the probe must mark something"))
	}
	if c := p.PodConditionType; c != "" {
		cpath := path.Child("podConditionType")
		if conditions[c] {
			errs = append(errs, field.Duplicate(cpath, c))
		}
		conditions[c] = true
		errs = append(errs, metav1validation.ValidateLabelName(c, cpath)...)
	}
	states := map[appsv1alpha1.ProbeState]bool{}
	for i := range p.MarkerPolicy {
		errs = append(errs, checkMarkerPolicy(path.Child("markerPolicy").Index(i), &p.MarkerPolicy[i], states)...)
	}
	return errs
}

// checkProbe: exactly one of exec, httpGet and tcpSocket (kruise-daemon runs no gRPC probe), no
// host (a probe reaches only its own pod), and no negative number. Unset numbers are left unset:
// kruise-daemon reads them as OpenKruise does (1 s, threshold 1).
func checkProbe(path *field.Path, p *corev1.Probe) field.ErrorList {
	var errs field.ErrorList
	handlers := 0
	if h := p.Exec; h != nil {
		handlers++
		if len(h.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if h := p.HTTPGet; h != nil {
		if handlers++; handlers > 1 {
			errs = append(errs, field.Forbidden(path.Child("httpGet"), "may not specify more than 1 handler type"))
		} else {
			errs = append(errs, checkHTTPGet(path.Child("httpGet"), h)...)
		}
	}
	if h := p.TCPSocket; h != nil {
		if handlers++; handlers > 1 {
			errs = append(errs, field.Forbidden(path.Child("tcpSocket"), "may not specify more than 1 handler type"))
		} else {
			if h.Host != "" {
				errs = append(errs, field.Forbidden(path.Child("tcpSocket", "host"), "a probe reaches only its pod's own IP"))
			}
			errs = append(errs, checkProbePort(path.Child("tcpSocket", "port"), h.Port)...)
		}
	}
	// gRPC alone is refused; beside another handler it is ignored, as OpenKruise does (kruise-daemon
	// runs the other one).
	if handlers == 0 && p.GRPC != nil {
		errs = append(errs, field.Forbidden(path.Child("grpc"), "kruise-daemon runs exec, httpGet and tcpSocket probes only"))
	} else if handlers == 0 {
		errs = append(errs, field.Required(path, "one of exec, httpGet and tcpSocket"))
	}
	for _, n := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		if n.v < 0 {
			errs = append(errs, field.Invalid(path.Child(n.name), n.v, "must be greater than or equal to 0"))
		}
	}
	return errs
}

func checkHTTPGet(path *field.Path, h *corev1.HTTPGetAction) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), `the CRD does not default it: "/" for the root`))
	} else if _, err := url.Parse(h.Path); err != nil {
		errs = append(errs, field.Invalid(path.Child("path"), h.Path, "must be a valid URL path"))
	}
	if h.Host != "" {
		errs = append(errs, field.Forbidden(path.Child("host"), "a probe reaches only its pod's own IP"))
	}
	errs = append(errs, checkProbePort(path.Child("port"), h.Port)...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for i, hd := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hd.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), hd.Name, msg))
		}
	}
	return errs
}

func checkProbePort(path *field.Path, port intstr.IntOrString) field.ErrorList {
	var msgs []string
	switch port.Type {
	case intstr.Int:
		msgs = validation.IsValidPortNum(int(port.IntVal))
	case intstr.String:
		msgs = validation.IsValidPortName(port.StrVal)
	default:
		msgs = []string{fmt.Sprintf("unknown port type %d", port.Type)}
	}
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(path, port.String(), m))
	}
	return errs
}

// checkMarkerPolicy: a state Succeeded or Failed, once per probe, with labels or annotations
// that are valid on a pod.
func checkMarkerPolicy(path *field.Path, m *appsv1alpha1.ProbeMarkerPolicy, states map[appsv1alpha1.ProbeState]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case m.State != appsv1alpha1.ProbeSucceeded && m.State != appsv1alpha1.ProbeFailed:
		errs = append(errs, field.NotSupported(path.Child("state"), m.State, []appsv1alpha1.ProbeState{appsv1alpha1.ProbeSucceeded, appsv1alpha1.ProbeFailed}))
	case states[m.State]:
		errs = append(errs, field.Duplicate(path.Child("state"), m.State))
	}
	states[m.State] = true
	if len(m.Labels) == 0 && len(m.Annotations) == 0 {
		return append(errs, field.Required(path, "labels or annotations to set on the pod in this state"))
	}
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, path.Child("labels"))...)
	return append(errs, apivalidation.ValidateAnnotations(m.Annotations, path.Child("annotations"))...)
}

// podProbeMarkerHasExec says whether any probe of spec runs a command in the pods.
func podProbeMarkerHasExec(spec *appsv1alpha1.PodProbeMarkerSpec) bool {
	for i := range spec.Probes {
		if spec.Probes[i].Probe.Exec != nil {
			return true
		}
	}
	return false
}

// selectorOf is the parsed selector of a spec that passed the checks.
func selectorOf(spec *appsv1alpha1.PodProbeMarkerSpec) string {
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}
