//go:build unix

package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
)

// credentialConfig is a CredentialProviderConfig of one provider named name.
func credentialConfig(name string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: %s
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: ["*.example.com"]
    defaultCacheDuration: 1m
`, name)
}

// writeAtomically replaces path's content the way a ConfigMap volume update does: readers see
// the old file or the new one, never a partial write.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

func nodeEvents(t *testing.T, client *fake.Clientset, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "node-a" {
			out = append(out, e)
		}
	}
	return out
}

// A changed credential-provider config file is picked up by the running daemon, and an invalid
// one is reported on the Node while the previous config stays in use: no restart needed.
func TestDaemonReloadsTheCredentialProviderConfig(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"first", "second"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	writeAtomically(t, config, credentialConfig("first"))

	sock := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	critest.Serve(t, sock, critest.NewFakeRuntime())
	o := testOptions("unix://" + sock)
	o.CredentialProviderConfig, o.CredentialProviderBinDir = config, bin
	o.CredentialProviderReloadPeriod = 20 * time.Millisecond
	client := fake.NewClientset(node("node-a"))
	d := runInBackground(t, o, deps{client: clientset.New(client), kruiseClient: clientset.NewKruise(kruisefake.NewSimpleClientset()),
		clock: clock.RealClock{}})
	var body string
	require.Eventually(t, func() bool {
		_, body = d.get(t, "/readyz?verbose")
		return strings.Contains(body, "[+]imagepull ok")
	}, 10*time.Second, 10*time.Millisecond, "the image puller has loaded the config: %s", body)

	writeAtomically(t, config, credentialConfig("second"))
	var evs []corev1.Event
	require.Eventually(t, func() bool {
		evs = nodeEvents(t, client, ReasonCredentialProviderConfigReloaded)
		return len(evs) > 0
	}, 10*time.Second, 10*time.Millisecond, "the changed config is used")
	assert.Equal(t, corev1.EventTypeNormal, evs[0].Type)
	assert.Equal(t, "Now using the changed credential provider config "+config+": providers second", evs[0].Message)

	writeAtomically(t, config, credentialConfig("third"))
	require.Eventually(t, func() bool {
		evs = nodeEvents(t, client, ReasonInvalidCredentialProviderConfig)
		return len(evs) > 0
	}, 10*time.Second, 10*time.Millisecond, "an invalid config is reported")
	assert.Equal(t, corev1.EventTypeWarning, evs[0].Type)
	assert.Contains(t, evs[0].Message, "plugin binary "+filepath.Join(bin, "third")+" does not exist")
	assert.Contains(t, evs[0].Message, "still using the previous one")
}
