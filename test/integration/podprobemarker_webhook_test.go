package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/webhook/ejobrequester"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

// TestPodProbeMarkerWebhooksInAnAPIServer runs the PodProbeMarker webhooks, as deploy/base
// configures them, against a real API server with RBAC: a user who may create PodProbeMarkers but
// not exec into pods is refused one with an exec probe and may create one with a TCP probe; a
// requester annotation written at create or update is overwritten with the user; an update that
// adds an exec probe is judged by its editor; a probe with a host is refused.
func TestPodProbeMarkerWebhooksInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ejobNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, sctx := ktesting.NewTestContext(t)
	addr, ca := serveWebhooks(t, sctx, ejobrequester.PodProbeMarkerWebhook(), validate.PodProbeMarkerWebhook(kube, ""))
	installWebhookPair(t, kube, addr, ca, "mpodprobemarker.kb.io", "vpodprobemarker.kb.io", "ppm")

	_, err = kube.CoreV1().Pods(ejobNS).Create(ctx(t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "game-0", Labels: map[string]string{"app": "game"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	ppms := rbacv1.PolicyRule{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"podprobemarkers"}, Verbs: []string{"create", "get", "update", "patch"}}
	bindRole(t, kube, "noexec", ppms, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
	bindRole(t, kube, "operator", ppms, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}})

	forged := ejobaccess.Requester{Username: "system:admin", Groups: []string{"system:masters"}}.Encode()
	marker := func(name string, handler corev1.ProbeHandler) *v1alpha1.PodProbeMarker {
		return &v1alpha1.PodProbeMarker{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{nodeprobe.RequesterAnnotation: forged}},
			Spec: v1alpha1.PodProbeMarkerSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "game"}},
				Probes: []v1alpha1.PodContainerProbe{{Name: "idle", ContainerName: "main", PodConditionType: "game.io/idle",
					Probe: v1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: handler}}}},
			},
		}
	}
	exec := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/idle"}}}
	tcp := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(7777)}}
	noexec := as(t, c.config, "noexec").AppsV1alpha1().PodProbeMarkers(ejobNS)
	// The configurations take effect once the API server's informers have them.
	waitFor(t, "the webhooks to refuse a user without pods/exec", func(ctx context.Context) (bool, error) {
		_, err := noexec.Create(ctx, marker("probe", exec), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "vpodprobemarker.kb.io"), nil
	})

	_, err = noexec.Create(ctx(t), marker("exec", exec), metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `admission webhook "vpodprobemarker.kb.io" denied the request`)
	assert.Contains(t, err.Error(), `user "noexec" may not create pods/exec in namespace "ejob"`)

	requester := func(m *v1alpha1.PodProbeMarker) string {
		t.Helper()
		r, err := nodeprobe.RequesterOf(m.Annotations)
		require.NoError(t, err)
		return r.Username
	}
	created, err := noexec.Create(ctx(t), marker("tcp", tcp), metav1.CreateOptions{})
	require.NoError(t, err, "no exec probe: no pods/exec needed")
	assert.Equal(t, "noexec", requester(created), "the forged requester overwritten at create")

	created.Annotations[nodeprobe.RequesterAnnotation] = forged
	updated, err := noexec.Update(ctx(t), created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "noexec", requester(updated), "the forged requester overwritten at update")

	updated.Spec.Probes[0].Probe.ProbeHandler = exec
	_, err = noexec.Update(ctx(t), updated, metav1.UpdateOptions{})
	require.Error(t, err, "an update adding an exec probe is judged by its editor")
	assert.Contains(t, err.Error(), "may not create pods/exec")

	operator := as(t, c.config, "operator").AppsV1alpha1().PodProbeMarkers(ejobNS)
	execd, err := operator.Update(ctx(t), updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "operator", requester(execd), "the editor becomes the requester")

	execd.Spec.Selector.MatchLabels["tier"] = "a"
	_, err = operator.Update(ctx(t), execd, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "may not change")

	host := marker("host", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80),
		Scheme: corev1.URISchemeHTTP, Host: "169.254.169.254"}})
	_, err = operator.Create(ctx(t), host, metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.probes[0].probe.httpGet.host")
}
