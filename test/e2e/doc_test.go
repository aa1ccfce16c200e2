//go:build e2e

// Package e2e holds the end-to-end tests run against the local cluster with kruise deployed
// (make e2e). One file per topic:
//
//	install_test.go          both components Ready and stamped with their commit, the daemon's runtime, the CRDs
//	harness_test.go          the cluster itself: Jobs with images from the loopback registry
//	network_test.go          the local cluster's network-safety rules
//	localpv_test.go          the local cluster's default StorageClass: a claim bound once a pod uses it, grown on request, deleted with its directory
//	nodescope_test.go        a daemon may write only its own node's objects (node scope)
//	crr_recreate_test.go     a CRR recreates containers: plain, SIGTERM ignored, force during postStart
//	crr_prestop_test.go      preStop hooks a CRR runs before the stop: exec, httpGet, sleep
//	crr_order_test.go        several CRRs of one pod, and ordered recreation of containers
//	crr_admission_test.go    what the validating webhook refuses at create, and what the controller fills in or refuses when it admits a CRR
//	crr_lifecycle_test.go    activeDeadlineSeconds, ttlSecondsAfterFinished, the pod deleted
//	crr_failure_test.go      failurePolicy Fail and Ignore
//	crr_unready_test.go      unreadyGracePeriodSeconds, with and without the readiness gate
//	crr_helpers_test.go      CRR builders and waits the CRR files share
//	sidecar_test.go          the Job sidecar terminator
//	sidecarset_inject_test.go  SidecarSet injection: the v1.7 native-sidecar seed, a regular sidecar with volume and transferEnv, paused injection
//	launchpriority_test.go   container launch priority: 3 levels, a Deployment, refusals, the seed's sidecar Job
//	webhook_test.go          the webhooks served after install; webhook_routing_test.go: calls reach each replica
//	imagepull_auth_test.go   pulls anonymous, with a pull secret, via the credential provider, wrong credentials
//	imagepull_test.go        ImagePullJob and ImageListPullJob behaviour: failures, parallelism, policy, TTL, deletion
//	imagepull_admission_test.go  unparsable image references refused at create by the validating webhooks
//	imagepull_helpers_test.go  the environment and checks the image pull files share
//	cloneset_test.go         CloneSet: scale subresource and in-place image update, env from a label, preDelete by finalizer
//	cloneset_scale_test.go   CloneSet: PVCs per instance ID (reuse and disablePVCReuse), podsToDelete, kubectl scale and an HPA
//	cloneset_update_test.go  CloneSet: ReCreate, InPlaceOnly, cpu/memory resized in place (recreated before Kubernetes 1.33), partition canary
//	cloneset_priority_test.go  CloneSet: containers updated in place in batches by priority; the state annotation
//	cloneset_hooks_test.go   CloneSet: preNormal, inPlaceUpdate and preDelete hooks by label and by finalizer
//	cloneset_seed_test.go    CloneSet: OpenKruise's published manifests (testdata/seeds) applied unchanged
//	cloneset_rollback_test.go  CloneSet: a raised partition rolls updated pods back in place (gate CloneSetPartitionRollback)
//	sidecarset_resources_test.go  SidecarSet resourcesPolicy: sidecar resources computed from the app containers (sum, max), a pod without a target refused
//	sidecarset_upgrade_test.go  SidecarSet: regular and native sidecar images upgraded in place (pod, IP and app container kept), maxUnavailable, partition, a non-image change reported
//	daemonset_test.go        Advanced DaemonSet on node vm: default tolerations and node pin, Standard recreates, in-place image update, preDelete hook, partition and update selector
//	daemonset_eligibility_test.go  Advanced DaemonSet vs the built-in one on simulated nodes: taints, cordoned, not-ready, pressure, selectors and affinity;
//	                         daemonset_eligibility_nodes_test.go: its simulated nodes, kept Ready by their leases
//	statefulset_test.go      Advanced StatefulSet: ordered identity and PVCs, in-place update, scale-in and PVC retention, ordinals.start, partition, reserveOrdinals, specified delete, v1alpha1, scale subresource
//	workload_parity_test.go  a StatefulSet and a DaemonSet manifest, as written and with only apiVersion changed to kruise's: the same pods
//	workload_seed_test.go    Advanced StatefulSet and DaemonSet: OpenKruise v1.1's published manifests (testdata/seeds)
//	sidecarset_compose_test.go  SidecarSet with a Job (sidecar terminator) and with a CloneSet's in-place update of the same pods
//	deletionprotection_test.go  policy.kruise.io/delete-protection: Always and Cascading on the workloads, a Service, Namespaces (a pod) and a CRD (an object)
//	conversion_test.go       every kind round-trips between v1alpha1 and v1beta1 through the conversion webhook
//	malformed_test.go        TestMalformedObjects: its runner, environment, object builders and writes
//	malformed_cases_test.go  its table of malformed objects
//	malformed_expect_test.go what kruise must answer to each row
//	podunavailablebudget_test.go  PodUnavailableBudget: a Deployment's budget counted by the controller, created before the pods, through a scale-up
//	simnodes_test.go         simulated nodes (kwok): a pod scheduled there by zone Running and Ready, kept off without the toleration, removed when its grace period ends
//	workloadspread_test.go   WorkloadSpread on a CloneSet and a Deployment over simulated zones and pools: 34/33/33%, spot overflow, Adaptive elastic pool;
//	                         workloadspread_helpers_test.go: the workloads, subsets and spread checks; workloadspread_scope_test.go: untargeted pods never sent
//	uniteddeployment_test.go UnitedDeployment of CloneSets over simulated zones: placement, scale, partitions per subset, Adaptive, the docs' example
//	persistentpodstate_test.go  PersistentPodState on simulated nodes: the docs' example, a deleted pod back on its node, the node gone (pod not held Pending), the auto-generate annotation
//	ephemeraljob_test.go     EphemeralJob: success, failure, replicas and parallelism, pause, deadline, TTL, the docs' example;
//	                         requesters without pods/exec refused, rights on some pods reaching only those, forged requesters overwritten
//	pub_admission_test.go    PodUnavailableBudget admission: concurrent evictions and deletes under maxUnavailable 1, kubectl drain, uncovered pods never sent, an image update refused;
//	                         pub_helpers_test.go: the workloads and waits they share (disruptive/pub_inplace_test.go: in-place rollouts paced by a budget)
//	resourcedistribution_test.go  ResourceDistribution: a Secret following labelled namespaces (joined, left), an edited copy reverted, a source change, an unowned object reported and left alone; admission; the docs' example
//	rollouts_test.go         OpenKruise's Rollout controller (kruise-rollout, built from the module proxy) running a 20/50/100% canary over a CloneSet and an Advanced StatefulSet
//
// The helpers every e2e test uses are in package framework; the tests that take kruise out of
// service for a while are in disruptive/, those that change the Helm release (a switch to
// cert-manager's certificates and back) in helm/, the Helm uninstall check in uninstall/.
package e2e
