package features

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
)

func TestFlag(t *testing.T) {
	defaults := map[string]bool{"KruiseDaemon": true, "SidecarTerminator": true, "ImagePullJobGate": true, "EnableExternalCerts": false,
		"InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false,
		"PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true,
		"PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false,
		"StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false,
		"PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false}
	with := func(changes map[string]bool) map[string]bool {
		out := map[string]bool{}
		for k, v := range defaults {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name     string
		args     []string // one --feature-gates per element
		want     map[string]bool
		warnings []string // gate names, sorted
		err      string
		str      string
	}{
		{name: "not given", want: defaults},
		{name: "empty string, as the Helm chart passes it", args: []string{""}, want: defaults},
		{name: "only separators and spaces", args: []string{" , ,"}, want: defaults},
		{name: "one gate off", args: []string{"KruiseDaemon=false"}, want: with(map[string]bool{"KruiseDaemon": false}),
			str: "KruiseDaemon=false"},
		{name: "spaces and case tolerated", args: []string{" SidecarTerminator = FALSE , ImagePullJobGate=True "},
			want: with(map[string]bool{"SidecarTerminator": false, "ImagePullJobGate": true}),
			str:  "ImagePullJobGate=true,SidecarTerminator=false"},
		{name: "OpenKruise's unimplemented gates warn", args: []string{"PodWebhook=false,DaemonWatchingPod=true,ImagePullJobGate=false"},
			want: with(map[string]bool{"ImagePullJobGate": false}), warnings: []string{"DaemonWatchingPod", "PodWebhook"},
			str: "DaemonWatchingPod=true,ImagePullJobGate=false,PodWebhook=false"},
		{name: "repeated flag adds, later wins", args: []string{"KruiseDaemon=false,TemplateNoDefaults=true", "KruiseDaemon=true"},
			want: defaults, warnings: []string{"TemplateNoDefaults"}, str: "KruiseDaemon=true,TemplateNoDefaults=true"},
		{name: "AllBeta=false turns the Beta gates off", args: []string{"AllBeta=false"},
			want: with(map[string]bool{"KruiseDaemon": false, "SidecarTerminator": false, "ImagePullJobGate": false, "InPlaceUpdateEnvFromMetadata": false,
				"StatefulSetAutoDeletePVC": false, "PodIndexLabel": false, "InPlaceWorkloadVerticalScaling": false, "PodUnavailableBudgetDeleteGate": false, "WorkloadSpread": false, "PodProbeMarkerGate": false}),
			str: "AllBeta=false"},
		{name: "AllBeta=false but one gate on", args: []string{"AllBeta=false,SidecarTerminator=true"},
			want: with(map[string]bool{"KruiseDaemon": false, "ImagePullJobGate": false, "InPlaceUpdateEnvFromMetadata": false,
				"StatefulSetAutoDeletePVC": false, "PodIndexLabel": false, "InPlaceWorkloadVerticalScaling": false, "PodUnavailableBudgetDeleteGate": false, "WorkloadSpread": false, "PodProbeMarkerGate": false}),
			str: "AllBeta=false,SidecarTerminator=true"},
		{name: "AllAlpha=true turns the Alpha gate on", args: []string{"AllAlpha=true"},
			want: with(map[string]bool{"EnableExternalCerts": true, "CloneSetEventHandlerOptimization": true, "PreDownloadImageForInPlaceUpdate": true, "PreDownloadImageForDaemonSetUpdate": true, "SidecarSetPatchPodMetadataDefaultsAllowed": true, "PodUnavailableBudgetUpdateGate": true, "DeletionProtectionForCRDCascadingGate": true, "EnablePodProbeMarkerOnServerless": true, "EnhancedLivenessProbe": true, "ResourceDistributionGate": true,
				"StatefulSetStartOrdinal": true, "StatefulSetAutoResizePVCGate": true, "RecreatePodWhenChangeVCTInCloneSetGate": true, "CloneSetShortHash": true, "CloneSetPartitionRollback": true, "PreparingUpdateAsUpdate": true, "EnableSortSidecarContainerByName": true}), str: "AllAlpha=true"},
		{name: "EnableExternalCerts is implemented, not warned about", args: []string{"EnableExternalCerts=true"},
			want: with(map[string]bool{"EnableExternalCerts": true}), str: "EnableExternalCerts=true"},
		{name: "typo", args: []string{"KruiseDeamon=false"}, err: "unknown feature gate KruiseDeamon; kruise's gates are AllAlpha, AllBeta, CloneSetEventHandlerOptimization, CloneSetPartitionRollback, CloneSetShortHash, DeletionProtectionForCRDCascadingGate, EnableExternalCerts, EnablePodProbeMarkerOnServerless, EnableSortSidecarContainerByName, EnhancedLivenessProbe, ImagePullJobGate, InPlaceUpdateEnvFromMetadata, InPlaceWorkloadVerticalScaling, KruiseDaemon, PodIndexLabel, PodProbeMarkerGate, PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate, PreDownloadImageForDaemonSetUpdate, PreDownloadImageForInPlaceUpdate, PreparingUpdateAsUpdate, RecreatePodWhenChangeVCTInCloneSetGate, ResourceDistributionGate, ResourcesDeletionProtection, SidecarSetPatchPodMetadataDefaultsAllowed, SidecarTerminator, StatefulSetAutoDeletePVC, StatefulSetAutoResizePVCGate, StatefulSetStartOrdinal, WorkloadSpread"},
		{name: "typo next to a good gate changes nothing", args: []string{"KruiseDaemon=false,Nope=true"}, want: defaults, err: "unknown feature gate Nope"},
		{name: "not a bool", args: []string{"KruiseDaemon=yes"}, err: `feature gate KruiseDaemon has value "yes": want true or false`},
		{name: "1 is not accepted", args: []string{"PodWebhook=1"}, err: `feature gate PodWebhook has value "1"`},
		{name: "no value", args: []string{"KruiseDaemon"}, err: "feature gate KruiseDaemon has no value"},
		{name: "empty value", args: []string{"KruiseDaemon="}, err: `feature gate KruiseDaemon has value ""`},
		{name: "no name", args: []string{"=true"}, err: `feature gate "=true" has no name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFlag(New())
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.Var(f, FlagName, f.Usage())
			var args []string
			for _, a := range tc.args {
				args = append(args, "--"+FlagName+"="+a)
			}
			err := fs.Parse(args)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.str, f.String())
			}
			if tc.want != nil {
				assert.Equal(t, tc.want, Effective(f.Gate()))
			}
			var got []string
			for _, w := range f.Warnings() {
				got = append(got, w.Gate)
				assert.NotEmpty(t, w.Reason)
			}
			assert.Equal(t, tc.warnings, got)
		})
	}
}

func TestFlagLog(t *testing.T) {
	f := NewFlag(New())
	require.NoError(t, f.Set("DaemonWatchingPod=false,SidecarTerminator=false"))
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.Log(logger)
	entries := logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
	require.Len(t, entries, 2)
	assert.Equal(t, []any{"gate", "DaemonWatchingPod", "value", false, "reason", f.Warnings()[0].Reason}, entries[0].ParameterKVList)
	assert.Equal(t, []any{"featureGates", map[string]bool{"KruiseDaemon": true, "SidecarTerminator": false, "ImagePullJobGate": true, "EnableExternalCerts": false,
		"InPlaceUpdateEnvFromMetadata": true, "CloneSetEventHandlerOptimization": false, "PreDownloadImageForInPlaceUpdate": false, "PreDownloadImageForDaemonSetUpdate": false, "SidecarSetPatchPodMetadataDefaultsAllowed": false,
		"PodUnavailableBudgetDeleteGate": true, "PodUnavailableBudgetUpdateGate": false, "ResourcesDeletionProtection": false, "DeletionProtectionForCRDCascadingGate": false, "WorkloadSpread": true,
		"PodProbeMarkerGate": true, "EnablePodProbeMarkerOnServerless": false, "EnhancedLivenessProbe": false, "ResourceDistributionGate": false,
		"StatefulSetAutoDeletePVC": true, "StatefulSetStartOrdinal": false,
		"PodIndexLabel": true, "StatefulSetAutoResizePVCGate": false, "RecreatePodWhenChangeVCTInCloneSetGate": false, "CloneSetShortHash": false, "CloneSetPartitionRollback": false, "PreparingUpdateAsUpdate": false, "InPlaceWorkloadVerticalScaling": true, "EnableSortSidecarContainerByName": false}},
		entries[1].ParameterKVList)
}

func TestGateListsAreDisjoint(t *testing.T) {
	for _, name := range Implemented() {
		_, ignored := Unimplemented(string(name))
		assert.False(t, ignored, "%s is both implemented and ignored", name)
	}
	assert.Len(t, unimplemented, 8)
	for name, reason := range unimplemented {
		assert.False(t, strings.ContainsAny(name, " =,"), name)
		assert.NotEmpty(t, reason, name)
	}
}

func TestCollector(t *testing.T) {
	g := New()
	require.NoError(t, NewFlag(g).Set("ImagePullJobGate=false"))
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewCollector(g)))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, 1)
	assert.Equal(t, "kruise_feature_enabled", families[0].GetName())
	got := map[string]float64{}
	for _, m := range families[0].GetMetric() {
		require.Len(t, m.GetLabel(), 1)
		got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	assert.Equal(t, map[string]float64{"CloneSetEventHandlerOptimization": 0, "EnableExternalCerts": 0, "ImagePullJobGate": 0, "InPlaceUpdateEnvFromMetadata": 1, "KruiseDaemon": 1, "PreDownloadImageForDaemonSetUpdate": 0, "PreDownloadImageForInPlaceUpdate": 0, "SidecarSetPatchPodMetadataDefaultsAllowed": 0, "PodUnavailableBudgetDeleteGate": 1, "PodUnavailableBudgetUpdateGate": 0, "ResourcesDeletionProtection": 0, "DeletionProtectionForCRDCascadingGate": 0, "SidecarTerminator": 1, "StatefulSetAutoDeletePVC": 1, "StatefulSetStartOrdinal": 0, "PodIndexLabel": 1, "StatefulSetAutoResizePVCGate": 0, "RecreatePodWhenChangeVCTInCloneSetGate": 0, "CloneSetShortHash": 0, "CloneSetPartitionRollback": 0, "PreparingUpdateAsUpdate": 0, "InPlaceWorkloadVerticalScaling": 1, "EnableSortSidecarContainerByName": 0, "WorkloadSpread": 1, "PodProbeMarkerGate": 1, "EnablePodProbeMarkerOnServerless": 0, "EnhancedLivenessProbe": 0, "ResourceDistributionGate": 0}, got)
}
