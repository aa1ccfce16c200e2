package cliutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// DryRun is the dryRun field of a create or patch request for kubectl's
// --dry-run strategy: All for server, none otherwise (a client dry run
// sends no request at all).
func DryRun(strategy cmdutil.DryRunStrategy) []string {
	if strategy == cmdutil.DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}
