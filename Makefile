# kruise: `make run` brings up a local cluster with kruise deployed; `make test` runs every test.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# Every go command (build, vet, test) with the flags the binaries are built with, so that on a cold
# machine each package compiles once and vet and the tests reuse what the build compiled.
export CGO_ENABLED ?= 0
GOFLAGS += -trimpath
export GOFLAGS
KRUISE_WORK ?= /var/tmp/kruise-local
E2E_KUBECONFIG := $(KRUISE_WORK)/admin.kubeconfig
E2E_TIMEOUT ?= 30m
PHASE := hack/phase.sh
# helm, built from the Go module proxy by `make deps` (hack/build-k8s.sh).
HELM := $(shell bash -c 'source hack/lib.sh && echo "$${HELM_BIN}/helm"')
# The tests skip go test's own vet pass: `make verify` runs go vet, every analyzer, on every package
# and build tag (CI runs it before the tests).
GO_TEST := go test -count=1 -vet=off
E2E_GO_TEST := KUBECONFIG=$(E2E_KUBECONFIG) KRUISE_HELM=$(HELM) $(GO_TEST) -tags e2e -timeout $(E2E_TIMEOUT)
# The Helm pass of the e2e suite. The kustomize base is rendered from the chart (hack/update-deploy.sh,
# compared by `make verify`), so under Helm the objects are the same and a feature behaves as it did
# in the kustomize pass: the pass runs what depends on how kruise was installed (components, CRDs
# and conversion, webhooks and what they admit, scopes, RBAC, the daemon's credential-provider
# config and pull secrets) and one rollout and one CRR, not each feature a second time.
# `make e2e-helm E2E_HELM_RUN=.` runs every test.
E2E_HELM_TESTS := TestKruiseComponentsReady|TestOwnerReferencesPermissionEnforcement|TestDaemonReportsRuntime|TestComponentsStampedWithTheirCommit|TestCRDsEstablished|TestConversion.*|TestWebhook.*|TestNodeScope|TestNetworkSafety|TestMalformedObjects|TestCRRAdmissionFillsLabelsAndContext|TestCRRRecreatesContainer|TestImagePullWithPullSecret|TestImagePullViaCredentialProvider|TestLaunchPriorityBarePod|TestCloneSetScaleAndUpdateInPlace
E2E_HELM_RUN ?= ^($(E2E_HELM_TESTS))$$

# `make e2e-k8s`: the Helm pass's tests, one test of each other feature, and the tests of what
# degrades on older minors, at each of K8S_VERSIONS (default: hack/lib.sh's K8S_TESTED_VERSIONS but
# the default release).
E2E_K8S_TESTS := TestSidecarNeverMainSucceeds|TestCloneSetScaleByKubectlAndHPA|TestStatefulSetOrderedIdentityInPlaceAndScaleIn|TestDaemonSetInPlaceImageUpdate|TestSidecarSetInjectNativeSeed|TestSidecarSetUpgradesImagesInPlace|TestWorkloadsBehaveAsTheBuiltinOnes|TestCloneSetResizesInPlace|TestCloneSetResizeWithoutResizeSubresource
E2E_K8S_RUN ?= ^($(E2E_HELM_TESTS)|$(E2E_K8S_TESTS))$$
export K8S_VERSIONS

.DEFAULT_GOAL := help
.PHONY: help run test test-unit test-integration e2e e2e-helm e2e-k8s reference-e2e dashboard-check fuzz deps build images deploy deploy-helm \
	cluster-up down status generate verify bench bench-sidecar bench-imagepull bench-scale bench-daemon bench-apiload \
	bench-webhook bench-launchpriority bench-cloneset bench-cloneset-production bench-cloneset-scale bench-workloads bench-sidecarset bench-predownload bench-pub bench-pub-scale bench-ws bench-ws-scale bench-bcj-scale bench-rd-scale bench-ud-scale bench-probes

help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: cluster-up deploy ## Bring the local cluster up, build and deploy kruise, install `kubectl kruise`, and show what to try.
	@hack/install-plugin.sh
	@hack/next-steps.sh

test: ## Unit tests, integration tests (real API server, Helm chart), then e2e on the local cluster: kustomize, then Helm.
	@$(PHASE) unit $(MAKE) --no-print-directory test-unit
	@$(PHASE) integration $(MAKE) --no-print-directory test-integration
	@$(PHASE) e2e $(MAKE) --no-print-directory e2e
	@$(PHASE) e2e-helm $(MAKE) --no-print-directory e2e-helm

test-unit: ## Unit tests (fakes only, no cluster), the e2e framework's own included, and the volume provisioner's (a module of its own).
	$(GO_TEST) $$(go list ./... | grep -v -e /test/integration -e /test/e2e -e /test/chart) ./test/e2e/framework/
	cd hack/tools/localpv && GOFLAGS="-mod=readonly -buildvcs=false" $(GO_TEST) ./...

test-integration: deps ## Tests against a real etcd and kube-apiserver started by the test (with cert-manager-lite for external certificates); helm lint/template of the chart; promtool check/test of the alert rules.
	cm="$$(hack/build-certmanager.sh)" && pt="$$(hack/install-prometheus.sh)" && \
	  KRUISE_CERT_MANAGER="$$cm" KRUISE_PROMTOOL="$$pt" KRUISE_HELM=$(HELM) \
	  $(GO_TEST) -timeout 15m ./test/integration/... ./test/chart/...

e2e: deploy ## End-to-end tests against the local cluster installed with kustomize; the disruptive ones run last, alone.
	$(E2E_GO_TEST) ./test/e2e/
	$(E2E_GO_TEST) -p 1 -parallel 4 ./test/e2e/disruptive/

e2e-helm: deploy-helm ## The install-dependent e2e tests, one rollout and one CRR against a Helm install; a helm upgrade to cert-manager's certificates and back; then `helm uninstall` must leave nothing behind or stuck.
	$(E2E_GO_TEST) -run '$(E2E_HELM_RUN)' ./test/e2e/
	cm="$$(hack/build-certmanager.sh)" && KRUISE_CERT_MANAGER="$$cm" $(E2E_GO_TEST) ./test/e2e/helm/
	$(E2E_GO_TEST) ./test/e2e/uninstall/

e2e-k8s: ## NOT part of `make test` or CI: the Helm pass's e2e tests on Kubernetes 1.30 and 1.32 (K8S_VERSIONS="v1.30.14 v1.32.13"), one local cluster each (down and up again: needs the cluster to itself), then back to the default release; results in _output/e2e-k8s.
	@E2E_K8S_RUN='$(E2E_K8S_RUN)' E2E_TIMEOUT=$(E2E_TIMEOUT) hack/e2e-k8s.sh

# OpenKruise v1.9.0's own e2e suite against the deployed kruise (hack/reference-e2e.sh,
# docs/migration.md): not part of `make test` or CI. REF_FOCUS (required) and REF_SKIP are Ginkgo
# --focus/--skip regexps over the reference's spec names, REF_FILES a --focus-file filter (e.g.
# v1beta1/cloneset.go), REF_TIMEOUT its suite timeout (default 60m, as the reference's CI), REF_OUT
# where the report goes (default _output/reference-e2e/<focus>), REF_KWOK_NODES how many untainted
# simulated nodes to add for the run (WorkloadSpread's cases need three zones: 3).
export REF_FOCUS REF_SKIP REF_FILES REF_TIMEOUT REF_OUT REF_KWOK_NODES
reference-e2e: deploy ## OpenKruise's e2e suite (built from the module proxy) on the local cluster with its CI's gates, each case classified by test/reference/known.yaml: REF_FOCUS=CloneSet.
	@hack/reference-e2e.sh

dashboard-check: ## Run every query of the Grafana dashboard through a real Prometheus scraping the local cluster's kruise (docs/operations.md, "Dashboard").
	prom="$${KRUISE_PROMETHEUS:-$$(dirname "$$(hack/install-prometheus.sh)")/prometheus}" && \
	  KUBECONFIG=$(E2E_KUBECONFIG) KRUISE_PROMETHEUS="$$prom" \
	  go test -tags dashboard -count=1 -v -timeout 15m -run TestDashboardQueriesAgainstPrometheus ./test/dashboard/

# The long benchmarks (BENCHMARKS.md); each also has a target of its own below.
BENCH_TESTS := TestCRRRestartLatency|TestSidecarJobLatency|TestImagePullLatency|TestControllerScale|TestDaemonFootprint|TestDaemonAPILoad|TestWebhookLatency|TestLaunchPriorityLatency|TestCloneSetRollout|TestWorkloadRollout|TestSidecarSetUpgrade|TestCloneSetPreDownloadLatency|TestDaemonSetPreDownloadLatency|TestPUBLatency
BENCH_GO_TEST := KUBECONFIG=$(E2E_KUBECONFIG) go test -tags bench -count=1 -v

bench: deploy build ## Every benchmark on the local cluster (about 90 minutes; BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 150m -run '$(BENCH_TESTS)' ./bench/...

bench-sidecar: deploy ## Job main exit → Complete: kruise sidecar terminator vs native sidecar vs none (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 60m -run TestSidecarJobLatency ./bench/...

bench-imagepull: deploy ## Image pre-pull: ImagePullJob create → succeeded vs a direct CRI PullImage (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 60m -run TestImagePullLatency ./bench/...

bench-scale: deploy ## Controller at scale: CPU, RSS, reconciles, API requests with 1k and 5k simulated nodes and 200 ImagePullJobs.
	$(BENCH_GO_TEST) -timeout 90m -run TestControllerScale ./bench/...

bench-daemon: deploy ## Daemon footprint on a node with 100 pods and 256 NodeImage tags: RSS, idle CPU, no LIST after start.
	$(BENCH_GO_TEST) -timeout 60m -run TestDaemonFootprint ./bench/...

bench-apiload: deploy build ## API server load of N kruise-daemons on simulated nodes: watches, requests, CPU, memory.
	$(BENCH_GO_TEST) -timeout 30m -run TestDaemonAPILoad ./bench/...

bench-webhook: deploy ## Pod Create call and create → Ready with and without the pod webhook on the path (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 60m -run TestWebhookLatency ./bench/...

bench-launchpriority: deploy ## Launch priority, 3 levels: create → all Ready, kruise vs OpenKruise v1.9.0 (built from the module proxy).
	$(BENCH_GO_TEST) -timeout 60m -run TestLaunchPriorityLatency ./bench/...

bench-cloneset: deploy ## CloneSet rollout of 30 pods: in place vs ReCreate vs Deployment vs OpenKruise v1.9.0 vs the kubelet's floor (BENCHMARKS.md; BENCH_CLONESET_SHAPE=production for the production-shaped pod).
	$(BENCH_GO_TEST) -timeout 60m -run TestCloneSetRollout ./bench/...

# The production-shaped pod (init work, a native sidecar, a per-pod claim) at maxUnavailable 1,
# then 3; BENCH_CLONESET_ROUNDS (default here 1) and the other BENCH_CLONESET_* apply.
bench-cloneset-production: deploy ## CloneSet rollout of 30 production-shaped pods at maxUnavailable 1 and 3: in place vs Deployment vs OpenKruise v1.9.0 vs the floor (BENCHMARKS.md).
	for m in 1 3; do \
	  BENCH_CLONESET_SHAPE=production BENCH_CLONESET_MAX_UNAVAILABLE=$$m BENCH_CLONESET_ROUNDS=$${BENCH_CLONESET_ROUNDS:-1} \
	    $(BENCH_GO_TEST) -timeout 60m -run TestCloneSetRollout ./bench/... || exit 1; \
	done

bench-workloads: deploy ## Advanced StatefulSet (10 pods) and DaemonSet rollouts: in place vs recreate vs the built-in controllers vs the kubelet's floor (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 60m -run TestWorkloadRollout ./bench/...

bench-sidecarset: deploy ## SidecarSet: a sidecar upgraded in place across 30 pods vs a rolling update of a Deployment carrying it (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 30m -run TestSidecarSetUpgrade ./bench/...

bench-predownload: deploy ## Image pre-download: a CloneSet rollout and an Advanced DaemonSet pod's downtime, in place to an image not on the node, gate off vs on (restarts the controller).
	$(BENCH_GO_TEST) -timeout 60m -run 'TestCloneSetPreDownloadLatency|TestDaemonSetPreDownloadLatency' ./bench/...

bench-probes: deploy ## Node probes, 100 pods x 2 exec probes at 1 s: the kubelet's readiness probes vs kruise's PodProbeMarker vs OpenKruise v1.9.0's: CPU, RSS, flip → condition latency, API writes (BENCHMARKS.md; hold /tmp/kruise-cluster.lock).
	$(BENCH_GO_TEST) -timeout 60m -run TestNodeProbes ./bench/...

bench-cloneset-scale: deps build ## CloneSets at scale (500 x 20 pods) on kwok nodes, private control plane: idle CPU, RSS, reconciles, in-place rollout time.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 120m -run TestCloneSetScale ./bench/...

bench-pub: deploy ## PodUnavailableBudget: pod DELETE and eviction latency with no budget webhook, pods not covered, charged and refused (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 30m -run TestPUBLatency ./bench/...

bench-pub-scale: deps build ## PodUnavailableBudget controller with 10,000 pods on kwok nodes, private control plane: time to correct status, idle CPU, RSS, reconciles, requests.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 60m -run TestPUBScale ./bench/...

bench-ws: deploy ## WorkloadSpread: pod create latency added by its webhook, targeted pods and others, kruise vs OpenKruise v1.9.0 vs no webhook (BENCHMARKS.md).
	$(BENCH_GO_TEST) -timeout 30m -run TestWSLatency ./bench/...

bench-ws-scale: deps build ## WorkloadSpread controllers, 500 spreads over 10,000 pods on kwok nodes in 3 zones, private control plane: time to correct status, idle CPU, RSS, reconciles, requests; kruise vs OpenKruise v1.9.0.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 60m -run TestWSScale ./bench/...

bench-bcj-scale: deps build ## BroadcastJob controllers, one job over 5,000 kwok nodes (BENCH_BCJ_SCALE_NODES), private control plane: time to all pods created and to Complete, CPU, RSS, requests; kruise vs OpenKruise v1.9.0.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 90m -run TestBCJScale ./bench/...

bench-rd-scale: deps build ## ResourceDistribution controllers, one Secret to 1,000 namespaces (BENCH_RD_SCALE_NAMESPACES), private control plane: time to all copies and to all updated, requests, idle reconciles, CPU, RSS; kruise vs OpenKruise v1.9.0.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 60m -run TestRDScale ./bench/...

bench-ud-scale: deps build ## UnitedDeployment controllers, 500 pods (CloneSet template) over three kwok zones (BENCH_UD_SCALE_PODS), private control plane: time to all Ready, idle reconciles, requests, CPU, RSS; kruise vs OpenKruise v1.9.0.
	kwok="$$(hack/kwok.sh)" && KRUISE_KWOK="$$kwok" KRUISE_CONTROLLER_BIN=$(CURDIR)/_output/bin/kruise-controller \
	  go test -tags bench -count=1 -v -timeout 60m -run TestUDScale ./bench/...

fuzz: ## Run every Go fuzz target for FUZZTIME each (default 30s); `go test` runs only their seeds.
	@hack/fuzz.sh

deps: ## Install Debian packages and build the cached Kubernetes, etcd, crictl, helm, cert-manager-lite, localpv and kruise-rollout binaries; unpack promtool and prometheus.
	@hack/install-deps.sh
	@hack/install-prometheus.sh >/dev/null
	@# Side by side: on a cold machine each one's downloads and links overlap the other's compiles.
	@hack/build-k8s.sh & k=$$!; hack/build-localpv.sh >/dev/null & l=$$!; hack/build-rollouts.sh >/dev/null & r=$$!; \
	  hack/build-certmanager.sh >/dev/null; c=$$?; \
	  wait $$k && wait $$l && wait $$r && exit $$c

build: ## Build kruise-daemon, kruise-controller and the kubectl-kruise plugin into _output/bin, stamped with the commit and its date.
	ld="$$(go run ./hack/tools/buildinfo)" && \
	CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags "-s -w $$ld" -o _output/bin/ ./cmd/kruise-daemon ./cmd/kruise-controller ./cmd/kubectl-kruise

images: ## Build the kruise-daemon and kruise-controller images as OCI and Docker archives in _output/images (KRUISE_IMAGE_REPO, KRUISE_IMAGE_TAG name them) for pushing to a registry.
	@hack/images.sh archives

cluster-up: ## Bring the local cluster up (idempotent).
	@hack/cluster.sh up

deploy: cluster-up ## Build kruise images, push them to the loopback registry and deploy with kustomize (removes a Helm install).
	@hack/deploy.sh

deploy-helm: cluster-up ## The same, installed with the Helm chart (removes a kustomize install: its CRDs and every kruise object).
	@KRUISE_INSTALL=helm hack/deploy.sh

down: ## Stop the local cluster and remove every trace of it.
	@hack/cluster.sh down

status: ## Show the local cluster's components.
	@hack/cluster.sh status

generate: ## Regenerate deepcopy, clients, listers, informers, CRDs, and deploy/base from the chart.
	@hack/update-codegen.sh
	@hack/update-deploy.sh

verify: ## Fail on stale generated files, gofmt, go vet, untidy go.mod or shellcheck findings; changes nothing.
	@hack/verify.sh
