package controller

import (
	"context"
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller/pubscope"
	"github.com/nodekruise/kruise/pkg/controller/sidecarsetscope"
	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/process/healthz"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	"github.com/nodekruise/kruise/pkg/webhook/conversion"
	"github.com/nodekruise/kruise/pkg/webhook/crrfill"
	"github.com/nodekruise/kruise/pkg/webhook/deletionprotection"
	"github.com/nodekruise/kruise/pkg/webhook/disruption"
	"github.com/nodekruise/kruise/pkg/webhook/ejobrequester"
	"github.com/nodekruise/kruise/pkg/webhook/livenessinjection"
	"github.com/nodekruise/kruise/pkg/webhook/ppsinjection"
	"github.com/nodekruise/kruise/pkg/webhook/priorityinjection"
	"github.com/nodekruise/kruise/pkg/webhook/probeinjection"
	wserver "github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/sidecarinjection"
	"github.com/nodekruise/kruise/pkg/webhook/spreadinjection"
	"github.com/nodekruise/kruise/pkg/webhook/uddefaults"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// webhooks are the webhook server and the certificate manager that feeds
// it. Every replica runs them, leader or not: admission and conversion must
// survive a failover.
type webhooks struct {
	certs  *certs.Manager
	server *wserver.Server
	// sidecars are the caches SidecarSet injection reads; they run with the server.
	sidecars *sidecarinjection.Caches
	// paths are the served paths, for the start-up log.
	paths []string
	// budgets are what the pod disruption webhook asks (nil with both PodUnavailableBudget gates
	// off); their cache runs with the server.
	budgets *podBudgets
	// spreads are what WorkloadSpread's pod webhooks read (nil with gate WorkloadSpread off);
	// their caches run with the server.
	spreads *spreadCaches
}

// newWebhooks builds the certificate manager and the webhook server with
// its handlers: the SidecarSet injection and launch-priority pod webhooks, the mutating and
// validating webhooks of ContainerRecreateRequests (which read pods at each request),
// ImagePullJobs, ImageListPullJobs, the workloads and SidecarSets (which list
// SidecarSets and their ControllerRevisions in namespace at each request), with
// ResourcesDeletionProtection the deletion protection of Namespaces and CRDs
// (which lists their pods, claims or objects at each request), WorkloadSpreads (validation
// always; with gate WorkloadSpread the pod create placement and delete accounting), and /convert. Admission reads with the webhook clients (d.webhookClients), whose
// rate limit is not the controllers': a busy controller never delays an
// answer to the API server. It does not call the API
// server.
func newWebhooks(o *Options, d deps, namespace string, metrics prometheus.Registerer) (*webhooks, error) {
	mode := certs.ModeManaged
	if o.featureGate().Enabled(features.EnableExternalCerts) {
		mode = certs.ModeExternal
	}
	mgr, err := certs.New(certs.Config{
		Mode:         mode,
		Namespace:    namespace,
		ServiceName:  o.WebhookServiceName,
		CRDs:         o.WebhookConversionCRDs,
		CertValidity: o.WebhookCertValidity,
		Client:       d.client,
		CRDClient:    d.crdClient,
		Clock:        d.webhookClock,
	})
	if err != nil {
		return nil, err
	}
	if err := metrics.Register(mgr.ExpiryCollector()); err != nil {
		return nil, fmt.Errorf("registering the webhook certificate metric: %w", err)
	}
	srv, err := wserver.New(wserver.Options{
		Addr:           o.WebhookAddr,
		GetCertificate: mgr.GetCertificate,
		Ready:          func() error { return mgr.Check(nil) },
		Metrics:        metrics,
	})
	if err != nil {
		return nil, err
	}
	client, kruiseClient := d.webhookClients()
	paths := []string{sidecarinjection.Path, sidecarinjection.SidecarSetPath, priorityinjection.Path, crrfill.Path, validate.CRRPath, validate.ImagePullJobPath,
		validate.ImageListPullJobPath, validate.CloneSetPath, validate.StatefulSetPath, validate.DaemonSetPath, validate.SidecarSetPath,
		validate.BroadcastJobPath, ejobrequester.Path, validate.EphemeralJobPath}
	// InPlaceOnly admits cpu and memory changes where the controllers resize pods (gate
	// InPlaceWorkloadVerticalScaling), and refuses them as OpenKruise does where they do not.
	inPlaceRules := validate.InPlaceRules{Resize: o.featureGate().Enabled(features.InPlaceWorkloadVerticalScaling)}
	sidecars := sidecarinjection.NewCaches(client, kruiseClient, namespace, certs.MutatingWebhookConfigurationName, transformObject)
	sidecars.Injector().Options = sidecarrules.InjectOptions{SortContainersByName: o.featureGate().Enabled(features.EnableSortSidecarContainerByName)}
	for _, wh := range []wserver.Webhook{
		sidecars.Injector().Webhook(),
		sidecarinjection.SidecarSetWebhook(),
		priorityinjection.Webhook(namespace),
		crrfill.Webhook(client.CoreV1()),
		validate.CRRWebhook(client.CoreV1()),
		validate.ImagePullJobWebhook(),
		validate.ImageListPullJobWebhook(),
		validate.CloneSetWebhook(inPlaceRules),
		validate.StatefulSetWebhook(inPlaceRules),
		validate.DaemonSetWebhook(),
		validate.BroadcastJobWebhook(),
		ejobrequester.Webhook(),
		validate.EphemeralJobWebhook(client),
		validate.SidecarSetWebhook(kruiseClient.AppsV1beta1(), client.AppsV1(), namespace, &validate.PatchAllowList{
			ConfigMaps: client.CoreV1(),
			Check:      patchAllowCheck(o.featureGate().Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed)),
		}, &sidecarsetscope.Includer{Client: client, SidecarSets: kruiseClient.AppsV1beta1(), Configuration: certs.MutatingWebhookConfigurationName}),
	} {
		if err := srv.HandleAdmission(wh); err != nil {
			return nil, err
		}
	}
	// Deletion protection: only with its gate (the chart renders its webhook entry likewise).
	if on, crdCascading := o.deletionProtection(); on {
		meta := d.webhookMetadata
		if meta == nil {
			meta = d.migrationClient
		}
		wh, err := deletionprotection.Webhook(deletionprotection.Options{
			Lookups:      deletionprotection.APILookups{Client: client, Metadata: meta},
			CRDCascading: crdCascading,
			Metrics:      metrics,
		})
		if err != nil {
			return nil, err
		}
		if err := srv.HandleAdmission(wh); err != nil {
			return nil, err
		}
		paths = append(paths, deletionprotection.Path)
	}
	budgets, err := handlePodUnavailableBudgets(o, srv, client, kruiseClient, namespace)
	if err != nil {
		return nil, err
	}
	paths = append(paths, validate.PodUnavailableBudgetPath)
	if budgets != nil {
		paths = append(paths, disruption.Path)
	}
	spreads, err := handleWorkloadSpreads(o, srv, client, kruiseClient, d.webhookDynamic, namespace)
	if err != nil {
		return nil, err
	}
	paths = append(paths, validate.WorkloadSpreadPath)
	if spreads != nil {
		paths = append(paths, spreadinjection.Path, spreadinjection.DeletePath)
	}
	// Enhanced liveness: only with its gate and a daemon to run the probes (the chart renders its
	// entry likewise); it reads nothing.
	if o.enhancedLiveness() {
		if err := srv.HandleAdmission(livenessinjection.Webhook(namespace)); err != nil {
			return nil, err
		}
		paths = append(paths, livenessinjection.Path)
	}
	ppmPaths, err := handlePodProbeMarkers(o, srv, client, kruiseClient, namespace)
	if err != nil {
		return nil, err
	}
	paths = append(paths, ppmPaths...)
	// ResourceDistribution: always mounted; with gate ResourceDistributionGate off it refuses
	// every distribution, as OpenKruise (the chart renders its entry only with the gate on).
	if err := srv.HandleAdmission(validate.ResourceDistributionWebhook(client, namespace,
		o.featureGate().Enabled(features.ResourceDistributionGate))); err != nil {
		return nil, err
	}
	paths = append(paths, validate.ResourceDistributionPath)
	// PersistentPodState: OpenKruise's checks (it lists the namespace's PersistentPodStates at a
	// create), and its pod webhook (no gate, as OpenKruise), which lists them and reads the
	// recorded node at a StatefulSet pod's create.
	for _, wh := range []wserver.Webhook{
		validate.PersistentPodStateWebhook(kruiseClient.AppsV1alpha1()),
		ppsinjection.Webhook(ppsinjection.Lookups{States: kruiseClient.AppsV1alpha1(), Nodes: client.CoreV1()}, namespace),
	} {
		if err := srv.HandleAdmission(wh); err != nil {
			return nil, err
		}
		paths = append(paths, wh.Path)
	}
	// AdvancedCronJob: OpenKruise's checks; it reads nothing.
	if err := srv.HandleAdmission(validate.AdvancedCronJobWebhook()); err != nil {
		return nil, err
	}
	paths = append(paths, validate.AdvancedCronJobPath)
	// UnitedDeployment: OpenKruise's defaults and checks; they read nothing.
	for _, wh := range []wserver.Webhook{uddefaults.Webhook(), validate.UnitedDeploymentWebhook()} {
		if err := srv.HandleAdmission(wh); err != nil {
			return nil, err
		}
		paths = append(paths, wh.Path)
	}
	convert, err := conversion.NewHandler(conversion.Options{Metrics: metrics})
	if err != nil {
		return nil, err
	}
	if err := srv.Handle(conversion.Path, convert); err != nil {
		return nil, err
	}
	return &webhooks{certs: mgr, server: srv, sidecars: sidecars, budgets: budgets, spreads: spreads, paths: append(paths, conversion.Path)}, nil
}

// handlePodUnavailableBudgets mounts the budget's validating webhook (always: with both gates off
// it refuses every budget, as OpenKruise) and, with either gate on, the pod disruption webhook
// (deletes and evictions with PodUnavailableBudgetDeleteGate, updates with
// PodUnavailableBudgetUpdateGate) asking the budgets it returns.
func handlePodUnavailableBudgets(o *Options, srv *wserver.Server, client kubernetes.Interface, kruiseClient versioned.Interface, namespace string) (*podBudgets, error) {
	fg := o.featureGate()
	del, upd := fg.Enabled(features.PodUnavailableBudgetDeleteGate), fg.Enabled(features.PodUnavailableBudgetUpdateGate)
	scope := &pubscope.Includer{Client: client, Budgets: kruiseClient.PolicyV1alpha1(), Configuration: certs.ValidatingWebhookConfigurationName}
	if err := srv.HandleAdmission(validate.PodUnavailableBudgetWebhook(kruiseClient.PolicyV1alpha1(), del || upd, scope)); err != nil {
		return nil, err
	}
	if !del && !upd {
		return nil, nil
	}
	budgets := newPodBudgets(client, kruiseClient, transformObject)
	wh := &disruption.Webhook{Budget: budgets, Pods: disruption.LivePods{Client: client.CoreV1()}, Delete: del, Update: upd, KruiseNamespace: namespace}
	if err := srv.HandleAdmission(wh.Webhook()); err != nil {
		return nil, err
	}
	return budgets, nil
}

// handlePodProbeMarkers mounts the PodProbeMarker webhooks: the requester stamp and the
// validation always (with PodProbeMarkerGate or KruiseDaemon off the validation refuses every
// marker, as OpenKruise), and with EnablePodProbeMarkerOnServerless (and PodProbeMarkerGate) the
// serverless pod annotation. It returns the paths it serves.
func handlePodProbeMarkers(o *Options, srv *wserver.Server, client kubernetes.Interface, kruiseClient versioned.Interface, namespace string) ([]string, error) {
	fg := o.featureGate()
	off := ""
	switch {
	case !fg.Enabled(features.PodProbeMarkerGate):
		off = string(features.PodProbeMarkerGate)
	case !fg.Enabled(features.KruiseDaemon):
		off = string(features.KruiseDaemon)
	}
	whs := []wserver.Webhook{ejobrequester.PodProbeMarkerWebhook(), validate.PodProbeMarkerWebhook(client, off)}
	if fg.Enabled(features.EnablePodProbeMarkerOnServerless) && fg.Enabled(features.PodProbeMarkerGate) {
		whs = append(whs, probeinjection.Webhook(kruiseClient.AppsV1alpha1(), client.AuthorizationV1(), namespace))
	}
	paths := make([]string, 0, len(whs))
	for _, wh := range whs {
		if err := srv.HandleAdmission(wh); err != nil {
			return nil, err
		}
		paths = append(paths, wh.Path)
	}
	return paths, nil
}

// patchAllowCheck judges a SidecarSet's patchPodMetadata against the allow-list's JSON, as pod
// injection reads it; defaultsAllowed is the gate SidecarSetPatchPodMetadataDefaultsAllowed.
func patchAllowCheck(defaultsAllowed bool) validate.PatchAllowCheck {
	return func(ss *appsv1beta1.SidecarSet, raw string) error {
		list, err := sidecarrules.ParsePatchAllowList(raw)
		if err != nil {
			return err
		}
		return sidecarrules.CheckPatchAllowed(ss, list, defaultsAllowed)
	}
}

// checks are the webhooks' /readyz checks: the server serves, and the
// certificate is valid with its CA in every configured object. Nothing that
// lists kruise's own kinds is one: such a list can need /convert (objects
// stored in another version), which the API server sends only to ready
// replicas, so a readiness that waited on it would never come once every
// replica was down. SidecarSet injection waits for its caches per request
// instead (sidecarinjection.Caches.WaitSynced).
func (w *webhooks) checks() []healthz.Checker {
	return []healthz.Checker{w.server.ReadyCheck(), w.certs}
}

// listen binds the webhook port, so that a conflict fails start-up.
func (w *webhooks) listen() (net.Addr, error) {
	return w.server.Listen()
}

// run runs the certificate manager and serves until ctx ends.
func (w *webhooks) run(ctx context.Context, start func(func() error)) {
	logger := klog.FromContext(ctx)
	start(func() error {
		if err := w.certs.Run(ctx); err != nil {
			return fmt.Errorf("webhook certificates: %w", err)
		}
		return nil
	})
	start(func() error {
		w.sidecars.Start(ctx)
		<-ctx.Done()
		w.sidecars.Shutdown()
		return nil
	})
	if w.budgets != nil {
		start(func() error {
			w.budgets.start(ctx)
			<-ctx.Done()
			w.budgets.shutdown()
			return nil
		})
	}
	if w.spreads != nil {
		start(func() error {
			w.spreads.start(ctx)
			<-ctx.Done()
			w.spreads.shutdown()
			return nil
		})
	}
	start(func() error { return w.server.Serve(ctx) })
	logger.Info("Serving webhooks on every replica", "webhooks", w.paths)
}

// newCRDClient is the apiextensions client the certificate manager writes
// conversion caBundles with.
var newCRDClient = apiextensionsclient.NewForConfig
