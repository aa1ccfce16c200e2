package nodeprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
)

// LivenessPrefix starts the NodePodProbe name of a container's enhanced liveness probe
// ("EnhancedLiveness#<container>"). A PodProbeMarker's probes are "<marker>#<probe>", and a
// marker's name is a lowercase DNS subdomain, so the two never collide.
const LivenessPrefix = "EnhancedLiveness#"

// MaxMessage is the longest result message kruise-daemon reports (the CRD allows 1024). A
// message is a short reason ("exit code 1", "HTTP 503", "timed out after 1s"), never a
// command's output or a response body.
const MaxMessage = 256

// ProbeName is the NodePodProbe name of probe of the PodProbeMarker marker.
func ProbeName(marker, probe string) string { return marker + "#" + probe }

// LivenessProbeName is the NodePodProbe name of container's enhanced liveness probe.
func LivenessProbeName(container string) string { return LivenessPrefix + container }

// Parsed is what a NodePodProbe probe name says.
type Parsed struct {
	// Marker and Probe are set for a PodProbeMarker's probe.
	Marker, Probe string
	// Container is set for an enhanced liveness probe.
	Container string
}

// IsLiveness says whether the name was an enhanced liveness probe's.
func (p Parsed) IsLiveness() bool { return p.Container != "" }

// ParseProbeName reads a NodePodProbe probe name; ok is false for a name neither form has.
func ParseProbeName(name string) (p Parsed, ok bool) {
	if c, found := strings.CutPrefix(name, LivenessPrefix); found {
		return Parsed{Container: c}, c != ""
	}
	marker, probe, found := strings.Cut(name, "#")
	if !found || marker == "" || probe == "" {
		return Parsed{}, false
	}
	return Parsed{Marker: marker, Probe: probe}, true
}

// ContainerLiveness is one entry of the apps.kruise.io/container-probe-context annotation: a
// container's liveness probe, taken off it when the pod was created.
type ContainerLiveness struct {
	Name          string        `json:"name"`
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
}

// EncodeProbeContext is the annotation's value for the probes.
func EncodeProbeContext(probes []ContainerLiveness) (string, error) {
	raw, err := json.Marshal(probes)
	if err != nil {
		return "", fmt.Errorf("encoding the container probe context: %w", err)
	}
	return string(raw), nil
}

// ReadProbeContext reads the liveness probes of a pod's annotations (nil when it has none).
func ReadProbeContext(annotations map[string]string, key string) ([]ContainerLiveness, error) {
	raw, ok := annotations[key]
	if !ok || raw == "" {
		return nil, nil
	}
	var out []ContainerLiveness
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("reading annotation %s: %w", key, err)
	}
	return out, nil
}

// RequesterAnnotation holds, as JSON (ejobaccess.Requester), the user who last created or changed
// a PodProbeMarker's spec. Only the mutating webhook writes it: whatever a user writes is
// overwritten.
const RequesterAnnotation = "apps.kruise.io/podprobemarker-requester"

// ErrNoRequester: the marker carries no requester annotation (created with the webhooks off).
var ErrNoRequester = errors.New("no " + RequesterAnnotation + " annotation: the PodProbeMarker was not admitted by kruise's webhooks")

// RequesterOf reads the requester of a marker's annotations.
func RequesterOf(annotations map[string]string) (ejobaccess.Requester, error) {
	raw, ok := annotations[RequesterAnnotation]
	if !ok {
		return ejobaccess.Requester{}, ErrNoRequester
	}
	var r ejobaccess.Requester
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return ejobaccess.Requester{}, fmt.Errorf("reading annotation %s: %w", RequesterAnnotation, err)
	}
	if r.Username == "" {
		return ejobaccess.Requester{}, fmt.Errorf("annotation %s names no user", RequesterAnnotation)
	}
	return r, nil
}

// ExecCheck is what the requester of a marker with exec probes needs on each pod: what
// kubectl exec needs.
var ExecCheck = ejobaccess.Check{Verb: "create", Resource: "pods", Subresource: "exec"}

// MarksAnnotation records on a pod, as JSON (map of NodePodProbe probe name to Marks), what
// kruise-controller has set on it from each probe's results, so that the marks of a probe that
// is removed, or of a PodProbeMarker that is deleted, are taken off again: their keys are no
// longer in any spec.
const MarksAnnotation = "apps.kruise.io/podprobemarker-marks"

// Marks are the pod condition type, label keys and annotation keys one probe has set.
type Marks struct {
	Condition   string   `json:"condition,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// ReadMarks reads the marks a pod's annotations record (empty when none).
func ReadMarks(annotations map[string]string) (map[string]Marks, error) {
	out := map[string]Marks{}
	raw, ok := annotations[MarksAnnotation]
	if !ok || raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return map[string]Marks{}, fmt.Errorf("reading annotation %s: %w", MarksAnnotation, err)
	}
	return out, nil
}

// EncodeMarks is the annotation's value for marks ("" when there are none: remove it).
func EncodeMarks(marks map[string]Marks) string {
	if len(marks) == 0 {
		return ""
	}
	raw, _ := json.Marshal(marks) // strings and slices of strings: never fails; keys sorted
	return string(raw)
}

// AskExec asks the API server whether r may create pods/exec on the pod name in namespace (on
// every pod of it when name is empty): the question the PodProbeMarker webhooks and
// kruise-controller ask before an exec probe may reach a pod.
func AskExec(ctx context.Context, sars authorizationv1client.SubjectAccessReviewInterface, r ejobaccess.Requester, namespace, name string) (ejobaccess.Decision, error) {
	return ejobaccess.AskFor(ctx, sars, r, []ejobaccess.Check{ExecCheck}, namespace, name)
}
