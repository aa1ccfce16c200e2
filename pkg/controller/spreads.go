package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/controller/spreadscope"
	"github.com/nodekruise/kruise/pkg/process/events"
	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/webhook/certs"
	wserver "github.com/nodekruise/kruise/pkg/webhook/server"
	"github.com/nodekruise/kruise/pkg/webhook/spreadinjection"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

// spreadCaches are what WorkloadSpread's pod webhooks read on every replica, leader or not:
// the WorkloadSpreads and the ReplicaSets' owners (a Deployment's pods are its ReplicaSets'),
// from caches of their own on the webhook clients. The ReplicaSet cache keeps their metadata
// only. Until the spread cache has synced, a pod routed here lists the spreads live
// (spreadinjection's fallback).
type spreadCaches struct {
	kruise   kruiseinformers.SharedInformerFactory
	kube     informers.SharedInformerFactory
	recorder *deferredRecorder
	client   kubernetes.Interface
	stop     func()
}

// leanReplicaSet keeps what the webhook reads of a ReplicaSet: its name and owners.
func leanReplicaSet(obj any) (any, error) {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rs.Name, Namespace: rs.Namespace, UID: rs.UID,
			ResourceVersion: rs.ResourceVersion, OwnerReferences: rs.OwnerReferences}}, nil
	}
	return transformObject(obj)
}

// handleWorkloadSpreads mounts the WorkloadSpread validating webhook (always: with gate
// WorkloadSpread off it refuses every spread, as OpenKruise) and, with the gate on, the pod
// webhooks, returning their caches (nil with the gate off).
func handleWorkloadSpreads(o *Options, srv *wserver.Server, client kubernetes.Interface, kruiseClient versioned.Interface,
	dyn dynamic.Interface, namespace string) (*spreadCaches, error) {
	enabled := o.featureGate().Enabled(features.WorkloadSpread)
	var targets *spreadinjection.DynamicTargets
	if dyn != nil {
		targets = spreadinjection.NewDynamicTargets(dyn, client.Discovery())
	}
	scope := &spreadscope.Includer{Client: client, Spreads: kruiseClient.AppsV1alpha1(),
		MutatingConfiguration: certs.MutatingWebhookConfigurationName, ValidatingConfiguration: certs.ValidatingWebhookConfigurationName}
	var st validate.SpreadTargets
	if targets != nil {
		st = targets
	}
	if err := srv.HandleAdmission(validate.WorkloadSpreadWebhook(kruiseClient.AppsV1alpha1(), enabled, st, scope)); err != nil {
		return nil, err
	}
	if !enabled {
		return nil, nil
	}
	c := &spreadCaches{
		kruise:   kruiseinformers.NewSharedInformerFactoryWithOptions(kruiseClient, 0, kruiseinformers.WithTransform(transformObject)),
		kube:     informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(leanReplicaSet)),
		recorder: &deferredRecorder{}, client: client,
	}
	wh := &spreadinjection.Webhook{
		Spreads:         spreadinjection.CachedSpreads{Lister: c.kruise.Apps().V1alpha1().WorkloadSpreads().Lister(), Client: kruiseClient.AppsV1alpha1()},
		Pods:            spreadinjection.LivePods{Client: client.CoreV1()},
		ReplicaSetOwner: spreadinjection.ListerReplicaSetOwner(c.kube.Apps().V1().ReplicaSets().Lister()),
		KruiseNamespace: namespace,
		Recorder:        c.recorder,
	}
	if targets != nil {
		wh.Targets = targets
	}
	for _, w := range []wserver.Webhook{wh.CreateWebhook(), wh.DeleteWebhook()} {
		if err := srv.HandleAdmission(w); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// start runs the caches and the Event recorder until ctx ends; shutdown waits for them.
func (c *spreadCaches) start(ctx context.Context) {
	c.kruise.Start(ctx.Done())
	c.kube.Start(ctx.Done())
	var rec record.EventRecorder
	stop, err := events.Ensure(ctx, c.client, &rec)
	if err != nil {
		klog.FromContext(ctx).Error(err, "WorkloadSpread admission failures are not recorded as Events")
		return
	}
	c.stop = stop
	c.recorder.set(rec)
}

func (c *spreadCaches) shutdown() {
	c.kruise.Shutdown()
	c.kube.Shutdown()
	if c.stop != nil {
		c.stop()
	}
}
