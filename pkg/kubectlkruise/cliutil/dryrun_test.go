package cliutil

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func TestDryRun(t *testing.T) {
	if got := DryRun(cmdutil.DryRunServer); !slices.Equal(got, []string{metav1.DryRunAll}) {
		t.Errorf("server: %v", got)
	}
	for _, s := range []cmdutil.DryRunStrategy{cmdutil.DryRunNone, cmdutil.DryRunClient} {
		if got := DryRun(s); got != nil {
			t.Errorf("strategy %v: %v, want none", s, got)
		}
	}
}
