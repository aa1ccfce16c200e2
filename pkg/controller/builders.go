package controller

import (
	"context"
	"fmt"

	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/controller/advancedcronjob"
	"github.com/nodekruise/kruise/pkg/controller/broadcastjob"
	"github.com/nodekruise/kruise/pkg/controller/cloneset"
	"github.com/nodekruise/kruise/pkg/controller/crr"
	"github.com/nodekruise/kruise/pkg/controller/daemonset"
	"github.com/nodekruise/kruise/pkg/controller/enhancedliveness"
	"github.com/nodekruise/kruise/pkg/controller/ephemeraljob"
	"github.com/nodekruise/kruise/pkg/controller/imagelistpulljob"
	"github.com/nodekruise/kruise/pkg/controller/imagepulljob"
	"github.com/nodekruise/kruise/pkg/controller/launchpriority"
	"github.com/nodekruise/kruise/pkg/controller/nodeimage"
	"github.com/nodekruise/kruise/pkg/controller/nodepodprobe"
	"github.com/nodekruise/kruise/pkg/controller/persistentpodstate"
	"github.com/nodekruise/kruise/pkg/controller/podprobemarker"
	"github.com/nodekruise/kruise/pkg/controller/podreadiness"
	"github.com/nodekruise/kruise/pkg/controller/podunavailablebudget"
	"github.com/nodekruise/kruise/pkg/controller/pubscope"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
	"github.com/nodekruise/kruise/pkg/controller/resourcedistribution"
	"github.com/nodekruise/kruise/pkg/controller/sidecarset"
	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/controller/sidecarterminator"
	"github.com/nodekruise/kruise/pkg/controller/spreadscope"
	"github.com/nodekruise/kruise/pkg/controller/statefulset"
	"github.com/nodekruise/kruise/pkg/controller/storageversion"
	"github.com/nodekruise/kruise/pkg/controller/uniteddeployment"
	"github.com/nodekruise/kruise/pkg/controller/workloadmetrics"
	"github.com/nodekruise/kruise/pkg/controller/workloadspread"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/workload/budgetwait"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// builders lists the controllers kruise-controller runs. A new kind's
// controller is one entry here and its builder (the adapter from Deps) below,
// in the list's order. Whatever a daemon carries out needs KruiseDaemon.
var builders = []Entry{
	{Name: crr.Name, Gates: []featuregate.Feature{features.KruiseDaemon}, Build: buildRecreate},
	// Pods that declare the KruisePodReady gate never become Ready without its
	// condition, daemon or not: always on.
	{Name: podreadiness.Name, Build: buildPodReadiness},
	// The default "phase" mechanism needs no daemon; Options.Validate refuses
	// --sidecar-termination=crr without one.
	{Name: sidecarterminator.Name, Gates: []featuregate.Feature{features.SidecarTerminator}, Build: buildSidecarTerminator},
	{Name: nodeimage.Name, Gates: []featuregate.Feature{features.KruiseDaemon}, Build: buildNodeImage},
	// Each node's NodePodProbe, which its daemon runs: needs KruiseDaemon and either
	// PodProbeMarkerGate or EnhancedLivenessProbe (Entry gates are all required, so the builder
	// decides the second).
	{Name: podprobemarker.Name, Gates: []featuregate.Feature{features.KruiseDaemon}, Build: buildPodProbeMarker},
	{Name: pullsecrets.Name, Gates: []featuregate.Feature{features.ImagePullJobGate, features.KruiseDaemon}, Build: buildPullSecrets},
	{Name: imagepulljob.Name, Gates: []featuregate.Feature{features.ImagePullJobGate, features.KruiseDaemon}, Build: buildImagePullJob},
	{Name: imagelistpulljob.Name, Gates: []featuregate.Feature{features.ImagePullJobGate, features.KruiseDaemon}, Build: buildImageListPullJob},
	// Container launch priority's barriers. No gate, as in OpenKruise (its
	// pod webhook, which adds the barriers, is gated; the controller is
	// not): without the webhook no pod carries a barrier and the controller
	// only watches. It runs even with --webhook-enabled=false, so that pods
	// admitted while the webhook was on (or by another replica) are still
	// released.
	{Name: launchpriority.Name, Build: buildLaunchPriority},
	// CloneSet: no gate, as in OpenKruise. It acts on CloneSets only; their pods carry the
	// InPlaceUpdateReady gate, which it alone sets.
	{Name: cloneset.Name, Build: buildCloneSet},
	// Advanced DaemonSet: no gate, as in OpenKruise. It acts on apps.kruise.io DaemonSets only.
	{Name: daemonset.Name, Build: buildDaemonSet},
	// Advanced StatefulSet: no gate, as in OpenKruise. It acts on apps.kruise.io StatefulSets
	// only, never on the built-in kind.
	{Name: statefulset.Name, Build: buildStatefulSet},
	// SidecarSet: no gate, as in OpenKruise. It upgrades in place only pods a SidecarSet
	// injected (the injection webhook is the one that puts sidecars in).
	{Name: sidecarset.Name, Build: buildSidecarSet},
	// SidecarSet injection's scope: the pod webhook's matchConditions follow the SidecarSets, so
	// only pods some SidecarSet can select are sent. No gate, as SidecarSet has none in OpenKruise;
	// it idles with the webhooks off.
	{Name: sidecarsetscope.Name, Build: buildSidecarSetScope},
	// PodUnavailableBudget's scope: the pod disruption webhooks' matchConditions follow the
	// budgets, so only pods some budget may cover are sent. It runs when either PUB gate is on
	// (as OpenKruise's budget controller); it idles otherwise and with the webhooks off.
	{Name: pubscope.Name, Build: buildPUBScope},
	// WorkloadSpread's scope: its pod webhooks' matchConditions follow the WorkloadSpreads, so
	// only pods of the workloads some WorkloadSpread targets are sent. It idles with the webhooks off.
	{Name: spreadscope.Name, Gates: []featuregate.Feature{features.WorkloadSpread}, Build: buildSpreadScope},
	// The rollout gauges of the four workloads above, read from their caches at scrape time.
	{Name: workloadmetrics.Name, Build: buildWorkloadMetrics},
	// Objects stored in an older version (an older kruise, OpenKruise) are rewritten in the storage
	// version, so that no read of them needs /convert. No gate: it only acts on such objects.
	{Name: storageversion.Name, Build: buildStorageVersion},
	// PodUnavailableBudget's status: runs when either of its gates is on (Entry gates are all
	// required, so the builder decides).
	{Name: podunavailablebudget.Name, Build: buildPodUnavailableBudget},
	// WorkloadSpread's status, deletion costs, adoption and Adaptive rescheduling (gate
	// WorkloadSpread, as OpenKruise's controller and webhook).
	{Name: workloadspread.Name, Gates: []featuregate.Feature{features.WorkloadSpread}, Build: buildWorkloadSpread},
	// BroadcastJob: no gate, as in OpenKruise. It acts on BroadcastJobs and their pods only.
	{Name: broadcastjob.Name, Build: buildBroadcastJob},
	// AdvancedCronJob: no gate, as in OpenKruise. Its ImageListPullJob runs need ImagePullJobGate
	// and KruiseDaemon, as the ImageListPullJob controller (the builder decides; without them such
	// a cron job gets an Event and no jobs).
	{Name: advancedcronjob.Name, Build: buildAdvancedCronJob},
	// EphemeralJob: no gate, as in OpenKruise. It adds containers only to pods its requester (the
	// user its mutating webhook recorded) may exec into, asked per pod.
	{Name: ephemeraljob.Name, Build: buildEphemeralJob},
	// PodProbeMarker results onto pods: kruise-daemon probes, this marks (as OpenKruise's
	// NodePodProbe controller, which needs both gates).
	{Name: nodepodprobe.Name, Gates: []featuregate.Feature{features.KruiseDaemon, features.PodProbeMarkerGate}, Build: buildNodePodProbe},
	// Enhanced liveness: restarts, through ContainerRecreateRequests and within a budget per
	// workload, the containers whose liveness probe kruise-daemon found failed (gate
	// EnhancedLivenessProbe; nothing runs the probes without KruiseDaemon).
	{Name: enhancedliveness.Name, Gates: []featuregate.Feature{features.KruiseDaemon, features.EnhancedLivenessProbe}, Build: buildEnhancedLiveness},
	// UnitedDeployment: no gate, as in OpenKruise. It acts only on UnitedDeployments and the
	// workloads they control.
	{Name: uniteddeployment.Name, Build: buildUnitedDeployment},
	// PersistentPodState: no gate, as in OpenKruise. It records where StatefulSet pods ran for the
	// PersistentPodStates that ask, and creates the ones StatefulSets ask for by annotation.
	{Name: persistentpodstate.Name, Build: buildPersistentPodState},
	// ResourceDistribution: copies a Secret or ConfigMap into namespaces (gate
	// ResourceDistributionGate, as OpenKruise's controller and webhook). Its copy caches are its
	// own, filtered to the objects it labelled.
	{Name: resourcedistribution.Name, Gates: []featuregate.Feature{features.ResourceDistributionGate}, Build: buildResourceDistribution},
}

// buildUnitedDeployment adapts Deps to the UnitedDeployment controller; it shares the other
// controllers' workload, pod and revision informers.
func buildUnitedDeployment(d Deps) (Controller, error) {
	apps := d.InformerFactory.Apps().V1()
	kruiseApps := d.KruiseInformerFactory.Apps().V1beta1()
	return uniteddeployment.New(uniteddeployment.Config{
		Config:               d.base(),
		UnitedDeployments:    d.KruiseInformerFactory.Apps().V1alpha1().UnitedDeployments(),
		CloneSets:            kruiseApps.CloneSets(),
		AdvancedStatefulSets: kruiseApps.StatefulSets(),
		StatefulSets:         apps.StatefulSets(),
		Deployments:          apps.Deployments(),
		ReplicaSets:          apps.ReplicaSets(),
		Pods:                 d.InformerFactory.Core().V1().Pods(),
		Revisions:            apps.ControllerRevisions(),
	})
}

// buildEnhancedLiveness adapts Deps to the enhanced liveness restart controller.
func buildEnhancedLiveness(d Deps) (Controller, error) {
	return enhancedliveness.New(enhancedliveness.Config{
		Config:        d.base(),
		Pods:          d.InformerFactory.Core().V1().Pods(),
		NodePodProbes: d.KruiseInformerFactory.Apps().V1alpha1().NodePodProbes(),
		CRRs:          d.KruiseInformerFactory.Apps().V1alpha1().ContainerRecreateRequests(),
		Metrics:       d.Metrics,
	})
}

// buildRecreate adapts Deps to the ContainerRecreateRequest lifecycle
// controller.
func buildRecreate(d Deps) (Controller, error) {
	return crr.New(crr.Config{
		Config:    d.base(),
		CRRs:      d.KruiseInformerFactory.Apps().V1alpha1().ContainerRecreateRequests(),
		Pods:      d.InformerFactory.Core().V1().Pods(),
		Leases:    d.NamespaceInformerFactory.Coordination().V1().Leases(),
		Namespace: d.Namespace,
		Metrics:   d.Metrics,
	})
}

// buildEphemeralJob adapts Deps to the EphemeralJob controller.
func buildEphemeralJob(d Deps) (Controller, error) {
	return ephemeraljob.New(ephemeraljob.Config{
		Config: d.base(),
		Jobs:   d.KruiseInformerFactory.Apps().V1alpha1().EphemeralJobs(),
		Pods:   d.InformerFactory.Core().V1().Pods(),
		// Without the webhooks a user could write the requester annotation: no job acts.
		WebhooksOff: !d.Options.WebhookEnabled,
	})
}

// buildNodePodProbe adapts Deps to the controller that marks pods with their probe results; the
// node informer (virtual-kubelet nodes) only with gate EnablePodProbeMarkerOnServerless.
func buildNodePodProbe(d Deps) (Controller, error) {
	cfg := nodepodprobe.Config{
		Config:        d.base(),
		Pods:          d.InformerFactory.Core().V1().Pods(),
		Markers:       d.KruiseInformerFactory.Apps().V1alpha1().PodProbeMarkers(),
		NodePodProbes: d.KruiseInformerFactory.Apps().V1alpha1().NodePodProbes(),
	}
	if d.Options.featureGate().Enabled(features.EnablePodProbeMarkerOnServerless) {
		cfg.Serverless, cfg.Nodes = true, d.InformerFactory.Core().V1().Nodes()
	}
	return nodepodprobe.New(cfg)
}

// buildPodReadiness adapts Deps to the KruisePodReady condition controller.
func buildPodReadiness(d Deps) (Controller, error) {
	cfg := podreadiness.Config{Client: d.Client, Pods: d.InformerFactory.Core().V1().Pods()}
	// Only CRRs hold pods not-ready, and only with a daemon to carry them out;
	// without one no apps.kruise.io informer starts.
	if d.Options.featureGate().Enabled(features.KruiseDaemon) {
		cfg.KruiseClient, cfg.CRRs = d.KruiseClient, d.KruiseInformerFactory.Apps().V1alpha1().ContainerRecreateRequests()
	}
	return podreadiness.New(cfg)
}

// buildSidecarTerminator adapts Deps to the Job sidecar terminator.
func buildSidecarTerminator(d Deps) (Controller, error) {
	m, err := sidecarterminator.ParseMechanism(d.Options.SidecarTermination)
	if err != nil {
		return nil, err
	}
	return sidecarterminator.New(sidecarterminator.Config{
		Config:    d.base(),
		Pods:      d.InformerFactory.Core().V1().Pods(),
		Nodes:     d.InformerFactory.Core().V1().Nodes(),
		Mechanism: m,
		Metrics:   d.Metrics,
	})
}

// buildNodeImage adapts Deps to the NodeImage-per-node controller.
func buildNodeImage(d Deps) (Controller, error) {
	return nodeimage.New(nodeimage.Config{
		Config:     d.base(),
		Nodes:      d.InformerFactory.Core().V1().Nodes(),
		NodeImages: d.KruiseInformerFactory.Apps().V1beta1().NodeImages(),
	})
}

// buildPodProbeMarker adapts Deps to the NodePodProbe controller. With PodProbeMarkerGate off it
// lists only the enhanced liveness probes and watches no PodProbeMarker; with
// EnhancedLivenessProbe off too it idles.
func buildPodProbeMarker(d Deps) (Controller, error) {
	fg := d.Options.featureGate()
	markers, liveness := fg.Enabled(features.PodProbeMarkerGate), fg.Enabled(features.EnhancedLivenessProbe)
	if !markers && !liveness {
		return idle{name: podprobemarker.Name, why: "PodProbeMarkerGate and EnhancedLivenessProbe are off"}, nil
	}
	cfg := podprobemarker.Config{
		Config:        d.base(),
		Pods:          d.InformerFactory.Core().V1().Pods(),
		Nodes:         d.InformerFactory.Core().V1().Nodes(),
		NodePodProbes: d.KruiseInformerFactory.Apps().V1alpha1().NodePodProbes(),
		Liveness:      liveness,
		// Without the webhooks a user could write the requester annotation: no exec probe runs.
		WebhooksOff: !d.Options.WebhookEnabled,
	}
	if markers {
		cfg.Markers = d.KruiseInformerFactory.Apps().V1alpha1().PodProbeMarkers()
	}
	return podprobemarker.New(cfg)
}

// buildPullSecrets adapts Deps to the pull-secret copy controller.
func buildPullSecrets(d Deps) (Controller, error) {
	return pullsecrets.New(pullsecrets.Config{
		Config:        d.base(),
		Secrets:       d.SecretInformerFactory.Core().V1().Secrets(),
		DaemonSecrets: d.DaemonConfigInformerFactory.Core().V1().Secrets(),
		Jobs:          d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs(),
	})
}

// buildImagePullJob adapts Deps to the ImagePullJob fan-out controller.
func buildImagePullJob(d Deps) (Controller, error) {
	return imagepulljob.New(imagepulljob.Config{
		Config:     d.base(),
		Jobs:       d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs(),
		NodeImages: d.KruiseInformerFactory.Apps().V1beta1().NodeImages(),
		Pods:       d.InformerFactory.Core().V1().Pods(),
		Secrets:    d.SecretInformerFactory.Core().V1().Secrets(),
		Copies:     d.DaemonConfigInformerFactory.Core().V1().Secrets(),
	})
}

// buildImageListPullJob adapts Deps to the ImageListPullJob controller.
func buildImageListPullJob(d Deps) (Controller, error) {
	return imagelistpulljob.New(imagelistpulljob.Config{
		Config:   d.base(),
		ListJobs: d.KruiseInformerFactory.Apps().V1beta1().ImageListPullJobs(),
		Jobs:     d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs(),
	})
}

// buildBroadcastJob adapts Deps to the BroadcastJob controller.
func buildBroadcastJob(d Deps) (Controller, error) {
	return broadcastjob.New(broadcastjob.Config{
		Config: d.base(),
		Jobs:   d.KruiseInformerFactory.Apps().V1beta1().BroadcastJobs(),
		Pods:   d.InformerFactory.Core().V1().Pods(),
		Nodes:  d.InformerFactory.Core().V1().Nodes(),
	})
}

// buildLaunchPriority adapts Deps to the container launch priority barrier
// controller.
func buildLaunchPriority(d Deps) (Controller, error) {
	return launchpriority.New(launchpriority.Config{Client: d.Client, Pods: d.InformerFactory.Core().V1().Pods()})
}

// buildCloneSet adapts Deps to the CloneSet controller.
func buildCloneSet(d Deps) (Controller, error) {
	cfg := cloneset.Config{
		Config:       d.base(),
		CloneSets:    d.KruiseInformerFactory.Apps().V1beta1().CloneSets(),
		Pods:         d.InformerFactory.Core().V1().Pods(),
		Claims:       d.InformerFactory.Core().V1().PersistentVolumeClaims(),
		Revisions:    d.InformerFactory.Apps().V1().ControllerRevisions(),
		Metrics:      d.Metrics,
		SkipPodNoise: d.Options.featureGate().Enabled(features.CloneSetEventHandlerOptimization),
		Resize:       d.resizeSupport(),
		Budget:       d.budgetCheck(),

		ClaimTemplates:          d.Options.featureGate().Enabled(features.RecreatePodWhenChangeVCTInCloneSetGate),
		PartitionRollback:       d.Options.featureGate().Enabled(features.CloneSetPartitionRollback),
		PreparingUpdateAsUpdate: d.Options.featureGate().Enabled(features.PreparingUpdateAsUpdate),
		ShortHash:               d.Options.featureGate().Enabled(features.CloneSetShortHash),
	}
	if preDownloadEnabled(d.Options.featureGate(), features.PreDownloadImageForInPlaceUpdate) {
		cfg.PreDownloadImages = true
		cfg.ImagePullJobs = d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs()
	}
	return cloneset.New(cfg)
}

// budgetCheck is how the workloads consult the PodUnavailableBudget: Deps.Budget, asked before
// in-place updates when gate PodUnavailableBudgetUpdateGate is on, and before a CloneSet marks a
// pod for recreation when PodUnavailableBudgetDeleteGate is.
func (d Deps) budgetCheck() budgetwait.Check {
	fg := d.Options.featureGate()
	b := d.Budget
	if b == nil && d.newBudget != nil {
		b = d.newBudget()
	}
	return budgetwait.Check{Budget: b, InPlace: fg.Enabled(features.PodUnavailableBudgetUpdateGate),
		Deletes: fg.Enabled(features.PodUnavailableBudgetDeleteGate)}
}

// resizeGateOff is why cpu and memory changes are not applied in place with gate
// InPlaceWorkloadVerticalScaling off.
const resizeGateOff = "gate InPlaceWorkloadVerticalScaling is off, so cpu and memory cannot change in running pods"

// resizeSupport is whether the workloads resize pods in place (CloneSet, Advanced StatefulSet,
// Advanced DaemonSet, SidecarSet): as the API server allows (Deps.Resize) with gate
// InPlaceWorkloadVerticalScaling on, never with it off (a cpu or memory change is then not in
// place, as in OpenKruise without the gate).
func (d Deps) resizeSupport() *inplace.ResizeSupport {
	if !d.Options.featureGate().Enabled(features.InPlaceWorkloadVerticalScaling) {
		return inplace.ResizeOff(resizeGateOff)
	}
	return d.Resize
}

// preDownloadEnabled reports whether a workload's image pre-download, under gate, is on: it
// needs the ImagePullJob controller and the daemons that carry the pulls out.
func preDownloadEnabled(fg featuregate.FeatureGate, gate featuregate.Feature) bool {
	return fg.Enabled(gate) && fg.Enabled(features.ImagePullJobGate) && fg.Enabled(features.KruiseDaemon)
}

// buildDaemonSet adapts Deps to the Advanced DaemonSet controller.
func buildDaemonSet(d Deps) (Controller, error) {
	cfg := daemonset.Config{
		Config:     d.base(),
		DaemonSets: d.KruiseInformerFactory.Apps().V1beta1().DaemonSets(),
		Pods:       d.InformerFactory.Core().V1().Pods(),
		Nodes:      d.InformerFactory.Core().V1().Nodes(),
		Revisions:  d.InformerFactory.Apps().V1().ControllerRevisions(),
		Budget:     d.budgetCheck(),
		Resize:     d.resizeSupport(),
	}
	if preDownloadEnabled(d.Options.featureGate(), features.PreDownloadImageForDaemonSetUpdate) {
		cfg.PreDownloadImages = true
		cfg.ImagePullJobs = d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs()
	}
	return daemonset.New(cfg)
}

// buildStatefulSet adapts Deps to the Advanced StatefulSet controller.
func buildStatefulSet(d Deps) (Controller, error) {
	cfg := statefulset.Config{
		Config:       d.base(),
		StatefulSets: d.KruiseInformerFactory.Apps().V1beta1().StatefulSets(),
		Pods:         d.InformerFactory.Core().V1().Pods(),
		Claims:       d.InformerFactory.Core().V1().PersistentVolumeClaims(),
		Revisions:    d.InformerFactory.Apps().V1().ControllerRevisions(),

		IgnoreOrdinalsStart:     !d.Options.featureGate().Enabled(features.StatefulSetStartOrdinal),
		IgnoreClaimRetention:    !d.Options.featureGate().Enabled(features.StatefulSetAutoDeletePVC),
		ResizeClaims:            d.Options.featureGate().Enabled(features.StatefulSetAutoResizePVCGate),
		NoPodIndexLabel:         !d.Options.featureGate().Enabled(features.PodIndexLabel),
		PreparingUpdateAsUpdate: d.Options.featureGate().Enabled(features.PreparingUpdateAsUpdate),
		Resize:                  d.resizeSupport(),
		Budget:                  d.budgetCheck(),
	}
	if preDownloadEnabled(d.Options.featureGate(), features.PreDownloadImageForInPlaceUpdate) {
		cfg.PreDownloadImages = true
		cfg.ImagePullJobs = d.KruiseInformerFactory.Apps().V1beta1().ImagePullJobs()
	}
	return statefulset.New(cfg)
}

// buildSidecarSet adapts Deps to the SidecarSet controller. Its ControllerRevisions live in
// kruise's namespace, so it reads them from the namespace-scoped factory.
func buildSidecarSet(d Deps) (Controller, error) {
	return sidecarset.New(sidecarset.Config{
		Config:      d.base(),
		SidecarSets: d.KruiseInformerFactory.Apps().V1beta1().SidecarSets(),
		Pods:        d.InformerFactory.Core().V1().Pods(),
		Namespaces:  d.InformerFactory.Core().V1().Namespaces(),
		Revisions:   d.NamespaceInformerFactory.Apps().V1().ControllerRevisions(),
		Namespace:   d.Namespace,
		Metrics:     d.Metrics,
		Budget:      d.budgetCheck(),
		Resize:      d.resizeSupport(),
	})
}

// buildSidecarSetScope adapts Deps to the controller that keeps the SidecarSet injection
// webhook's matchConditions. Without --webhook-enabled there is no webhook to scope (and no RBAC
// to read its configuration): it idles.
func buildSidecarSetScope(d Deps) (Controller, error) {
	if !d.Options.WebhookEnabled {
		return idle{name: sidecarsetscope.Name, why: "the webhooks are off"}, nil
	}
	return sidecarsetscope.New(sidecarsetscope.Config{
		Client:        d.Client,
		SidecarSets:   d.KruiseInformerFactory.Apps().V1beta1().SidecarSets(),
		Configuration: certs.MutatingWebhookConfigurationName,
	})
}

// buildPUBScope adapts Deps to the controller that keeps the PodUnavailableBudget pod webhooks'
// matchConditions. It reads the budgets and the pods (the shared lean cache keeps labels, owners
// and generateName).
func buildPUBScope(d Deps) (Controller, error) {
	fg := d.Options.featureGate()
	if !fg.Enabled(features.PodUnavailableBudgetDeleteGate) && !fg.Enabled(features.PodUnavailableBudgetUpdateGate) {
		return idle{name: pubscope.Name, why: "both PodUnavailableBudget gates are off"}, nil
	}
	if !d.Options.WebhookEnabled {
		return idle{name: pubscope.Name, why: "the webhooks are off"}, nil
	}
	return pubscope.New(pubscope.Config{
		Client:        d.Client,
		Budgets:       d.KruiseInformerFactory.Policy().V1alpha1().PodUnavailableBudgets(),
		Pods:          d.InformerFactory.Core().V1().Pods(),
		Configuration: certs.ValidatingWebhookConfigurationName,
	})
}

// buildSpreadScope adapts Deps to the controller that keeps WorkloadSpread's pod webhooks'
// matchConditions, in both configurations.
func buildSpreadScope(d Deps) (Controller, error) {
	if !d.Options.WebhookEnabled {
		return idle{name: spreadscope.Name, why: "the webhooks are off"}, nil
	}
	return spreadscope.New(spreadscope.Config{
		Client:                  d.Client,
		Spreads:                 d.KruiseInformerFactory.Apps().V1alpha1().WorkloadSpreads(),
		MutatingConfiguration:   certs.MutatingWebhookConfigurationName,
		ValidatingConfiguration: certs.ValidatingWebhookConfigurationName,
	})
}

// buildWorkloadMetrics adapts Deps to the workload gauges. They read the
// informers of the CloneSet, Advanced StatefulSet and DaemonSet and
// SidecarSet controllers (shared: no watch of their own) and speak only
// while the term runs, that is while this replica leads.
func buildWorkloadMetrics(d Deps) (Controller, error) {
	apps := d.KruiseInformerFactory.Apps().V1beta1()
	c := workloadmetrics.New(workloadmetrics.Listers{
		CloneSets:    apps.CloneSets().Lister(),
		StatefulSets: apps.StatefulSets().Lister(),
		DaemonSets:   apps.DaemonSets().Lister(),
		SidecarSets:  apps.SidecarSets().Lister(),
	})
	if err := d.Metrics.Register(c); err != nil {
		return nil, fmt.Errorf("registering the workload metrics: %w", err)
	}
	return c, nil
}

// buildStorageVersion adapts Deps to the storage version migration; without the clients (tests)
// it idles.
func buildStorageVersion(d Deps) (Controller, error) {
	if d.CRDClient == nil || d.MigrationClient == nil {
		return idle{name: storageversion.Name, why: "no apiextensions or metadata client"}, nil
	}
	return storageversion.New(storageversion.Config{
		CRDs:    d.CRDClient.ApiextensionsV1().CustomResourceDefinitions(),
		Objects: d.MigrationClient,
	})
}

// buildPodUnavailableBudget adapts Deps to the PodUnavailableBudget controller; with both of
// its gates off (OpenKruise's rule) it idles and watches nothing.
func buildPodUnavailableBudget(d Deps) (Controller, error) {
	fg := d.Options.featureGate()
	if !fg.Enabled(features.PodUnavailableBudgetDeleteGate) && !fg.Enabled(features.PodUnavailableBudgetUpdateGate) {
		return idle{name: podunavailablebudget.Name, why: "PodUnavailableBudgetDeleteGate and PodUnavailableBudgetUpdateGate are off"}, nil
	}
	apps := d.InformerFactory.Apps().V1()
	kruiseApps := d.KruiseInformerFactory.Apps().V1beta1()
	return podunavailablebudget.New(podunavailablebudget.Config{
		Config:               d.base(),
		Budgets:              d.KruiseInformerFactory.Policy().V1alpha1().PodUnavailableBudgets(),
		Pods:                 d.InformerFactory.Core().V1().Pods(),
		ReplicaSets:          apps.ReplicaSets(),
		Deployments:          apps.Deployments(),
		StatefulSets:         apps.StatefulSets(),
		CloneSets:            kruiseApps.CloneSets(),
		AdvancedStatefulSets: kruiseApps.StatefulSets(),
		Scale:                podunavailablebudget.NewScaleFunc(d.Client.Discovery()),
	})
}

// buildWorkloadSpread adapts Deps to the WorkloadSpread controller. It shares the budget
// controller's workload informers and reads other kinds' replicas through their scale subresource.
func buildWorkloadSpread(d Deps) (Controller, error) {
	apps := d.InformerFactory.Apps().V1()
	kruiseApps := d.KruiseInformerFactory.Apps().V1beta1()
	return workloadspread.New(workloadspread.Config{
		Config:               d.base(),
		WorkloadSpreads:      d.KruiseInformerFactory.Apps().V1alpha1().WorkloadSpreads(),
		Pods:                 d.InformerFactory.Core().V1().Pods(),
		Nodes:                d.InformerFactory.Core().V1().Nodes(),
		ReplicaSets:          apps.ReplicaSets(),
		Deployments:          apps.Deployments(),
		StatefulSets:         apps.StatefulSets(),
		Jobs:                 d.InformerFactory.Batch().V1().Jobs(),
		CloneSets:            kruiseApps.CloneSets(),
		AdvancedStatefulSets: kruiseApps.StatefulSets(),
		Scale:                podunavailablebudget.NewScaleFunc(d.Client.Discovery()),
	})
}

// buildAdvancedCronJob adapts Deps to the AdvancedCronJob controller.
func buildAdvancedCronJob(d Deps) (Controller, error) {
	apps := d.KruiseInformerFactory.Apps().V1beta1()
	cfg := advancedcronjob.Config{
		Config:        d.base(),
		CronJobs:      apps.AdvancedCronJobs(),
		Jobs:          d.InformerFactory.Batch().V1().Jobs(),
		BroadcastJobs: apps.BroadcastJobs(),
	}
	if fg := d.Options.featureGate(); fg.Enabled(features.ImagePullJobGate) && fg.Enabled(features.KruiseDaemon) {
		cfg.ImageListPullJobs = apps.ImageListPullJobs()
	}
	return advancedcronjob.New(cfg)
}

// idle is a controller with nothing to do in this configuration.
type idle struct{ name, why string }

func (i idle) Name() string { return i.name }

func (i idle) Run(ctx context.Context, _ int) error {
	klog.FromContext(ctx).Info("Nothing to do", "reason", i.why)
	<-ctx.Done()
	return nil
}

// base is what every controller is built from besides its informers.
func (d Deps) base() ctrlbase.Config {
	return ctrlbase.Config{Client: d.Client, KruiseClient: d.KruiseClient}
}

// buildResourceDistribution adapts Deps to the ResourceDistribution controller.
func buildResourceDistribution(d Deps) (Controller, error) {
	return resourcedistribution.New(resourcedistribution.Config{
		Config:        d.base(),
		Distributions: d.KruiseInformerFactory.Apps().V1alpha1().ResourceDistributions(),
		Namespaces:    d.InformerFactory.Core().V1().Namespaces(),
	})
}

// buildPersistentPodState adapts Deps to the PersistentPodState controller.
func buildPersistentPodState(d Deps) (Controller, error) {
	return persistentpodstate.New(persistentpodstate.Config{
		Config:               d.base(),
		States:               d.KruiseInformerFactory.Apps().V1alpha1().PersistentPodStates(),
		StatefulSets:         d.InformerFactory.Apps().V1().StatefulSets(),
		AdvancedStatefulSets: d.KruiseInformerFactory.Apps().V1beta1().StatefulSets(),
		Pods:                 d.InformerFactory.Core().V1().Pods(),
		Nodes:                d.InformerFactory.Core().V1().Nodes(),
		IgnoreOrdinalsStart:  !d.Options.featureGate().Enabled(features.StatefulSetStartOrdinal),
	})
}
