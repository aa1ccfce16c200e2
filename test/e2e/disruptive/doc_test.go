//go:build e2e

// Package disruptive holds e2e tests that take kruise out of service on the node for a while.
// They run after the main suite (test/e2e), alone: nothing else may depend on the daemon
// meanwhile.
//
// One file per topic; the tests:
//
//	leader_failover_test.go     the controller leader SIGKILLed in the middle of an ImagePullJob
//	leader_graceful_test.go     the controller leader stopped gracefully: it hands the Lease over
//	leader_unready_crr_test.go  a CRR holding its pod unready, deleted while no controller leads
//	crr_daemon_killed_test.go   the daemon SIGKILLed in the middle of a CRR
//	daemon_upgrade_test.go      the daemon's DaemonSet rolled to a new image in the middle of a CRR
//	pull_daemon_killed_test.go  the daemon SIGKILLed in the middle of a pull
//	pull_faults_test.go         pulls from a registry that fails, drops connections or stalls
//	runtime_restart_test.go     containerd restarted under a CRR and a pull
//	runtime_hang_test.go        the runtime taking the daemon's calls and never answering
//	apiserver_outage_test.go    kube-apiserver stopped while the daemon works
//	coexist_test.go             the daemon refusing to act beside OpenKruise's daemon
//	webhook_outage_test.go      the controller scaled to 0: only pods marked for kruise (and kruise's own kinds) are refused
//	cloneset_predownload_test.go  gate PreDownloadImageForInPlaceUpdate turned on: a CloneSet's new image pulled ahead
//	daemonset_predownload_test.go  gate PreDownloadImageForDaemonSetUpdate turned on: an Advanced DaemonSet's new image pulled ahead
//	cloneset_controller_killed_test.go  the controller leader SIGKILLed in the middle of a CloneSet's in-place rollout
//	pub_inplace_test.go         gate PodUnavailableBudgetUpdateGate turned on: in-place rollouts of a CloneSet and an Advanced StatefulSet paced by a PodUnavailableBudget
//	gated_rollouts_test.go      the three gates above turned on in one controller restart, their four rollouts side by side
//
// and what they share:
//
//	env_test.go                 the test's clients, namespace and node (faultEnv)
//	crr_helpers_test.go         CRRs, their pods, and counting each container's stops
//	pull_helpers_test.go        fresh images, ImagePullJob runs, pull records and final statuses
//	daemon_helpers_test.go      finding the node's daemon pod, waiting for it to be Ready and for the DaemonSet's rollouts
//	kruise_instances_test.go    the instances of kruise's own containers, which no fault may restart
//	leader_helpers_test.go      controller replicas, the leader Lease, and a job whose pace the test sets
package disruptive
