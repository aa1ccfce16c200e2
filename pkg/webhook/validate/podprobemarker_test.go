package validate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
)

func validPPM() *appsv1alpha1.PodProbeMarker {
	return &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "game", Namespace: ns},
		Spec: appsv1alpha1.PodProbeMarkerSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}},
			Probes: []appsv1alpha1.PodContainerProbe{{
				Name: "idle", ContainerName: "main",
				Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/idle"}}}}},
				PodConditionType: "game.io/idle",
				MarkerPolicy: []appsv1alpha1.ProbeMarkerPolicy{
					{State: appsv1alpha1.ProbeSucceeded, Labels: map[string]string{"game.io/idle": "true"}},
					{State: appsv1alpha1.ProbeFailed, Annotations: map[string]string{"game.io/idle": "false"}},
				},
			}},
		},
	}
}

func tcpProbe(port intstr.IntOrString) appsv1alpha1.ContainerProbeSpec {
	return appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}}
}

func admitPPM(t *testing.T, client *fake.Clientset, ppm *appsv1alpha1.PodProbeMarker, user string, off ...string) (bool, string, string, []string) {
	t.Helper()
	req := request(t, "podprobemarkers", "PodProbeMarker", ppm, "v1alpha1")
	req.UserInfo = authenticationv1.UserInfo{Username: user}
	gate := ""
	if len(off) > 0 {
		gate = off[0]
	}
	res := PodProbeMarkerWebhook(client, gate).Admitter.Admit(context.Background(), req)
	require.NoError(t, res.Err)
	return res.Allowed, res.Reason, res.Message, res.Warnings
}

// OpenKruise v1.9.0's refusals, each naming its field.
func TestPodProbeMarkerRules(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(string, *authorizationv1.ResourceAttributes) bool { return true })
	probe := func(f func(p *appsv1alpha1.PodContainerProbe)) func(*appsv1alpha1.PodProbeMarker) {
		return func(m *appsv1alpha1.PodProbeMarker) { f(&m.Spec.Probes[0]) }
	}
	twice := func(m *appsv1alpha1.PodProbeMarker) {
		p := m.Spec.Probes[0]
		p.Name, p.PodConditionType = "busy", "game.io/busy"
		m.Spec.Probes = append(m.Spec.Probes, p)
	}
	for name, tc := range map[string]struct {
		mutate func(*appsv1alpha1.PodProbeMarker)
		reason string
		field  string
	}{
		"no selector":    {func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Selector = nil }, ReasonInvalidSelector, "spec.selector"},
		"empty selector": {func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Selector = &metav1.LabelSelector{} }, ReasonInvalidSelector, "must not be empty"},
		"bad selector": {func(m *appsv1alpha1.PodProbeMarker) {
			m.Spec.Selector.MatchLabels = map[string]string{"a": "b c"}
		}, ReasonInvalidSelector, "spec.selector"},
		"no probes":     {func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes = nil }, ReasonInvalidProbes, "spec.probes"},
		"no name":       {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Name = "" }), ReasonInvalidProbes, "probes[0].name"},
		"hash in name":  {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Name = "a#b" }), ReasonInvalidProbes, "'#'"},
		"reserved name": {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Name = "Ready" }), ReasonInvalidProbes, "probes[0].name"},
		"kruise's name": {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Name = "InPlaceUpdateReady" }), ReasonInvalidProbes, "probes[0].name"},
		"no container":  {probe(func(p *appsv1alpha1.PodContainerProbe) { p.ContainerName = "" }), ReasonInvalidProbes, "containerName"},
		"no handler":    {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Probe.Exec = nil }), ReasonInvalidProbes, "one of exec, httpGet and tcpSocket"},
		"empty command": {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Probe.Exec.Command = nil }), ReasonInvalidProbes, "exec.command"},
		"two handlers": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}
		}), ReasonInvalidProbes, "more than 1 handler"},
		"grpc": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.Exec, p.Probe.GRPC = nil, &corev1.GRPCAction{Port: 80}
		}), ReasonInvalidProbes, "grpc"},
		"tcp host": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe = tcpProbe(intstr.FromInt32(80))
			p.Probe.TCPSocket.Host = "10.0.0.1"
		}), ReasonInvalidProbes, "tcpSocket.host"},
		"tcp port zero":  {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Probe = tcpProbe(intstr.FromInt32(0)) }), ReasonInvalidProbes, "tcpSocket.port"},
		"tcp port name":  {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Probe = tcpProbe(intstr.FromString("Not_A_Name")) }), ReasonInvalidProbes, "tcpSocket.port"},
		"negative":       {probe(func(p *appsv1alpha1.PodContainerProbe) { p.Probe.PeriodSeconds = -1 }), ReasonInvalidProbes, "periodSeconds"},
		"no marks":       {probe(func(p *appsv1alpha1.PodContainerProbe) { p.PodConditionType, p.MarkerPolicy = "", nil }), ReasonInvalidProbes, "must mark something"},
		"bad condition":  {probe(func(p *appsv1alpha1.PodContainerProbe) { p.PodConditionType = "not a name" }), ReasonInvalidProbes, "podConditionType"},
		"bad state":      {probe(func(p *appsv1alpha1.PodContainerProbe) { p.MarkerPolicy[0].State = appsv1alpha1.ProbeUnknown }), ReasonInvalidProbes, "markerPolicy[0].state"},
		"same state":     {probe(func(p *appsv1alpha1.PodContainerProbe) { p.MarkerPolicy[1].State = appsv1alpha1.ProbeSucceeded }), ReasonInvalidProbes, "markerPolicy[1].state"},
		"policy no keys": {probe(func(p *appsv1alpha1.PodContainerProbe) { p.MarkerPolicy[0].Labels = nil }), ReasonInvalidProbes, "labels or annotations"},
		"bad label":      {probe(func(p *appsv1alpha1.PodContainerProbe) { p.MarkerPolicy[0].Labels = map[string]string{"k": "a b"} }), ReasonInvalidProbes, "markerPolicy[0].labels"},
		"bad annotation": {probe(func(p *appsv1alpha1.PodContainerProbe) { p.MarkerPolicy[1].Annotations = map[string]string{"a b": "x"} }), ReasonInvalidProbes, "markerPolicy[1].annotations"},
		"http host": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.Exec, p.Probe.HTTPGet = nil, &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP, Host: "169.254.169.254"}
		}), ReasonInvalidProbes, "httpGet.host"},
		"http no path": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.Exec, p.Probe.HTTPGet = nil, &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}
		}), ReasonInvalidProbes, "httpGet.path"},
		"http no scheme": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.Exec, p.Probe.HTTPGet = nil, &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}
		}), ReasonInvalidProbes, "httpGet.scheme"},
		"http header": {probe(func(p *appsv1alpha1.PodContainerProbe) {
			p.Probe.Exec, p.Probe.HTTPGet = nil, &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "a b", Value: "x"}}}
		}), ReasonInvalidProbes, "httpHeaders[0].name"},
		"same probe name": {func(m *appsv1alpha1.PodProbeMarker) {
			twice(m)
			m.Spec.Probes[1].Name = "idle"
		}, ReasonInvalidProbes, "probes[1].name"},
		"same condition": {func(m *appsv1alpha1.PodProbeMarker) {
			twice(m)
			m.Spec.Probes[1].PodConditionType = "game.io/idle"
		}, ReasonInvalidProbes, "probes[1].podConditionType"},
	} {
		m := validPPM()
		tc.mutate(m)
		allowed, reason, msg, _ := admitPPM(t, client, m, "alice")
		assert.False(t, allowed, name)
		assert.Equal(t, tc.reason, reason, name)
		assert.Contains(t, msg, tc.field, name)
	}
}

// What OpenKruise admits kruise admits: never stricter for the same manifest (but for the exec
// rule and the requester annotation).
func TestPodProbeMarkerAdmitsWhatOpenKruiseAdmits(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(string, *authorizationv1.ResourceAttributes) bool { return true })
	for name, mutate := range map[string]func(*appsv1alpha1.PodProbeMarker){
		"as is":          func(*appsv1alpha1.PodProbeMarker) {},
		"condition only": func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].MarkerPolicy = nil },
		"policy only":    func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "" },
		"zero numbers":   func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Probe.Probe.PeriodSeconds = 0 },
		"named tcp port": func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].Probe = tcpProbe(intstr.FromString("game")) },
		"expressions": func(m *appsv1alpha1.PodProbeMarker) {
			m.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
		},
		"https with headers": func(m *appsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].Probe.Exec = nil
			m.Spec.Probes[0].Probe.HTTPGet = &corev1.HTTPGetAction{Path: "/healthz?x=1", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}
		},
		"grpc beside exec (ignored)": func(m *appsv1alpha1.PodProbeMarker) {
			m.Spec.Probes[0].Probe.GRPC = &corev1.GRPCAction{Port: 9090}
		},
		"reserved condition type as condition": func(m *appsv1alpha1.PodProbeMarker) { m.Spec.Probes[0].PodConditionType = "Ready" },
		"many probes": func(m *appsv1alpha1.PodProbeMarker) {
			p := m.Spec.Probes[0]
			p.Name, p.PodConditionType, p.ContainerName = "busy", "", "sidecar"
			m.Spec.Probes = append(m.Spec.Probes, p)
		},
	} {
		m := validPPM()
		mutate(m)
		allowed, _, msg, _ := admitPPM(t, client, m, "alice")
		assert.True(t, allowed, "%s: %s", name, msg)
	}
}

// With PodProbeMarkerGate or KruiseDaemon off, every marker is refused, naming the gate.
func TestPodProbeMarkerGatesOff(t *testing.T) {
	allowed, reason, msg, _ := admitPPM(t, fake.NewClientset(), validPPM(), "alice", "KruiseDaemon")
	assert.False(t, allowed)
	assert.Equal(t, ReasonPodProbeMarkerDisabled, reason)
	assert.Contains(t, msg, "feature gate KruiseDaemon is not enabled")
}

// The selector may not change; the probes may.
func TestPodProbeMarkerSelectorImmutable(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(string, *authorizationv1.ResourceAttributes) bool { return true })
	update := func(m *appsv1alpha1.PodProbeMarker) bool {
		req := request(t, "podprobemarkers", "PodProbeMarker", m, "v1alpha1")
		req.Operation, req.OldObject = admissionv1.Update, request(t, "podprobemarkers", "PodProbeMarker", validPPM(), "v1alpha1").Object
		req.UserInfo = authenticationv1.UserInfo{Username: "alice"}
		res := PodProbeMarkerWebhook(client, "").Admitter.Admit(context.Background(), req)
		require.NoError(t, res.Err)
		if !res.Allowed {
			assert.Equal(t, ReasonInvalidSelector, res.Reason)
			assert.Contains(t, res.Message, "may not change")
		}
		return res.Allowed
	}
	m := validPPM()
	m.Spec.Probes[0].Probe.PeriodSeconds = 5
	assert.True(t, update(m))
	m.Spec.Selector.MatchLabels["tier"] = "a"
	assert.False(t, update(m))
}

// A marker with exec probes needs a requester who may create pods/exec in the namespace or on a
// matching pod; one with only TCP and HTTP probes does not.
func TestPodProbeMarkerExecRequester(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "game"}}}
	}
	client := fake.NewClientset(pod("game-0"), pod("game-1"))
	var asked []authorizationv1.ResourceAttributes
	allowSAR(client, func(user string, ra *authorizationv1.ResourceAttributes) bool {
		asked = append(asked, *ra)
		switch user {
		case "admin":
			return true
		case "game-1-only":
			return ra.Name == "game-1"
		}
		return false
	})
	allowed, _, _, warnings := admitPPM(t, client, validPPM(), "admin")
	assert.True(t, allowed)
	assert.Empty(t, warnings)
	assert.Equal(t, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"}, asked[0])

	allowed, reason, msg, _ := admitPPM(t, client, validPPM(), "nobody")
	assert.False(t, allowed)
	assert.Equal(t, ReasonRequesterForbidden, reason)
	assert.Contains(t, msg, `user "nobody" may not create pods/exec in namespace "team"`)
	assert.Contains(t, msg, "nor on any of the 2 pods")

	allowed, _, _, warnings = admitPPM(t, client, validPPM(), "game-1-only")
	assert.True(t, allowed, "rights on one matching pod by name")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "only in the pods the user may exec into")

	asked = nil
	tcp := validPPM()
	tcp.Spec.Probes[0].Probe = tcpProbe(intstr.FromInt32(7777))
	allowed, _, msg, _ = admitPPM(t, client, tcp, "nobody")
	assert.True(t, allowed, msg)
	assert.Empty(t, asked, "no exec probe, no question")
}

// An update is judged as a create: the editor must hold the rights, whoever created the marker.
func TestPodProbeMarkerUpdateJudgesTheEditor(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(user string, _ *authorizationv1.ResourceAttributes) bool { return user == "admin" })
	req := request(t, "podprobemarkers", "PodProbeMarker", validPPM(), "v1alpha1")
	req.Operation, req.OldObject = admissionv1.Update, req.Object
	req.UserInfo = authenticationv1.UserInfo{Username: "nobody"}
	res := PodProbeMarkerWebhook(client, "").Admitter.Admit(context.Background(), req)
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonRequesterForbidden, res.Reason)
	req.SubResource = "status"
	assert.True(t, PodProbeMarkerWebhook(client, "").Admitter.Admit(context.Background(), req).Allowed, "status is not judged")
}

// A requester annotation that does not name the sender (the mutating webhook did not run) is
// refused; the one it writes is admitted.
func TestPodProbeMarkerRequesterAnnotation(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(string, *authorizationv1.ResourceAttributes) bool { return true })
	m := validPPM()
	m.Spec.Probes[0].Probe = tcpProbe(intstr.FromInt32(80))
	m.Annotations = map[string]string{nodeprobe.RequesterAnnotation: ejobaccess.Requester{Username: "admin"}.Encode()}
	allowed, reason, msg, _ := admitPPM(t, client, m, "alice")
	assert.False(t, allowed)
	assert.Equal(t, ReasonRequesterMismatch, reason)
	assert.Contains(t, msg, "mpodprobemarker.kb.io")
	m.Annotations[nodeprobe.RequesterAnnotation] = ejobaccess.Requester{Username: "alice"}.Encode()
	allowed, _, msg, _ = admitPPM(t, client, m, "alice")
	assert.True(t, allowed, msg)
}

// A marker whose spec does not decode is refused as such.
func TestPodProbeMarkerUndecodable(t *testing.T) {
	req := request(t, "podprobemarkers", "PodProbeMarker", validPPM(), "v1alpha1")
	req.Object.Raw = []byte(`{"metadata":{"name":"m"},"spec":{"probes":7}}`)
	res := PodProbeMarkerWebhook(fake.NewClientset(), "").Admitter.Admit(context.Background(), req)
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonUndecodable, res.Reason)
}
