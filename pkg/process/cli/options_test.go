package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/nodekruise/kruise/pkg/process/features"
)

func init() {
	// Every test applies the logging flags again.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

func newTestCommand(runFn func(ctx context.Context) error) (*bytes.Buffer, func(args ...string) int) {
	var stderr bytes.Buffer
	var flagValue string
	c := Component{
		Name:     "kruise-test",
		Short:    "test",
		AddFlags: func(fs *pflag.FlagSet) { fs.StringVar(&flagValue, "some-flag", "", "a flag") },
		Run:      runFn,
	}
	return &stderr, func(args ...string) int {
		c.FeatureGate = features.New()
		cmd := NewCommand(c)
		var stdout bytes.Buffer
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(args)
		code := run(cmd, &stderr)
		stderr.Write(stdout.Bytes())
		return code
	}
}

func TestCommandVersion(t *testing.T) {
	ran := false
	out, exec := newTestCommand(func(context.Context) error { ran = true; return nil })
	require.Equal(t, 0, exec("--version"))
	assert.Contains(t, out.String(), "kruise-test v0.0.0-dev (commit ")
	assert.False(t, ran)
}

func TestCommandUsageErrors(t *testing.T) {
	out, exec := newTestCommand(func(context.Context) error { return nil })
	assert.Equal(t, 1, exec("--no-such-flag"))
	assert.Contains(t, out.String(), "Error: unknown flag: --no-such-flag\nRun 'kruise-test --help' for usage.")
	out.Reset()
	assert.Equal(t, 1, exec("--logging-format=xml"))
	assert.Contains(t, out.String(), "invalid logging flags")
	out.Reset()
	assert.Equal(t, 1, exec("positional"))
	assert.Contains(t, out.String(), "takes no arguments")
}

func TestCommandFeatureGates(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want map[string]bool // enabled gates seen by Run
		out  string
	}{
		{args: nil, want: map[string]bool{"KruiseDaemon": true, "SidecarTerminator": true, "ImagePullJobGate": true, "EnableExternalCerts": false, "InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false, "StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false, "PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false, "PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true, "PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false}},
		{args: []string{"--feature-gates="}, want: map[string]bool{"KruiseDaemon": true, "SidecarTerminator": true, "ImagePullJobGate": true, "EnableExternalCerts": false, "InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false, "StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false, "PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false, "PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true, "PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false}},
		{args: []string{"--feature-gates=KruiseDaemon=false,PodWebhook=false"},
			want: map[string]bool{"KruiseDaemon": false, "SidecarTerminator": true, "ImagePullJobGate": true, "EnableExternalCerts": false, "InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false, "StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false, "PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false, "PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true, "PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false}},
		{args: []string{"--feature_gates", "ImagePullJobGate=false"},
			want: map[string]bool{"KruiseDaemon": true, "SidecarTerminator": true, "ImagePullJobGate": false, "EnableExternalCerts": false, "InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false, "StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false, "PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false, "PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true, "PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false}},
		{args: []string{"--feature-gates=EnableExternalCerts=true"},
			want: map[string]bool{"KruiseDaemon": true, "SidecarTerminator": true, "ImagePullJobGate": true, "EnableExternalCerts": true, "InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false, "StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false, "PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false, "PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true, "PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false}},
		{args: []string{"--feature-gates=KruiseDeamon=false"}, code: 1, out: "unknown feature gate KruiseDeamon"},
		{args: []string{"--feature-gates=KruiseDaemon=no"}, code: 1, out: `has value "no": want true or false`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			var seen map[string]bool
			gate := features.New()
			cmd := NewCommand(Component{
				Name:        "kruise-test",
				FeatureGate: gate,
				Run: func(context.Context) error {
					seen = features.Effective(gate)
					return nil
				},
			})
			cmd.SetArgs(tc.args)
			cmd.SetErr(&stderr)
			assert.Equal(t, tc.code, run(cmd, &stderr))
			assert.Contains(t, stderr.String(), tc.out)
			assert.Equal(t, tc.want, seen)
		})
	}
	// Run registered kruise_feature_enabled in the process-wide registry.
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	assert.Contains(t, names, "kruise_feature_enabled")
}

func TestCommandRunErrorAndSuccess(t *testing.T) {
	_, exec := newTestCommand(func(context.Context) error { return errors.New("boom") })
	assert.Equal(t, 1, exec("--some-flag=x"))
	_, exec = newTestCommand(func(context.Context) error { return nil })
	assert.Equal(t, 0, exec()) // other logging flags: see the binary smoke test (logging can be applied once per process)
}

func TestCommandSIGTERMCancelsContext(t *testing.T) {
	started := make(chan struct{})
	_, exec := newTestCommand(func(ctx context.Context) error {
		close(started)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("context was not cancelled by SIGTERM")
		}
	})
	go func() {
		<-started
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	assert.Equal(t, 0, exec())
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))

	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBECONFIG", "")
	o := NewKubeOptions()
	_, err := o.RESTConfig("kruise-test")
	assert.ErrorContains(t, err, "neither --kubeconfig nor $KUBECONFIG is set")

	t.Setenv("KUBECONFIG", path)
	cfg, err := o.RESTConfig("kruise-test")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, float32(20), cfg.QPS)
	assert.Contains(t, cfg.UserAgent, "kruise-test/")

	o.Kubeconfig = filepath.Join(dir, "missing")
	_, err = o.RESTConfig("kruise-test")
	assert.ErrorContains(t, err, "loading kubeconfig "+o.Kubeconfig)

	o.QPS = 0
	assert.ErrorContains(t, o.Validate(), "--kube-api-qps")
}
