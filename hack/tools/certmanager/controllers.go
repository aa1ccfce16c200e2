package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"golang.org/x/sync/errgroup"

	// The SelfSigned and CA issuer implementations register themselves with the issuer factory
	// the Issuer and ClusterIssuer controllers use to set their Ready condition.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// enabledControllers are the cert-manager controllers this command runs (importing their packages
// registers them in controllerpkg.Known()). The names are cert-manager's, so its documentation of
// each applies.
var enabledControllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	approver.ControllerName,
	crselfsigned.CRControllerName,
	crca.CRControllerName,
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

// controllers are the constructed cert-manager controllers, sharing one controller context.
type controllers struct {
	base    *controllerpkg.Context
	workers int
	loops   map[string]controllerpkg.Interface
}

func newControllers(ctx context.Context, o options) (*controllers, error) {
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		Namespace:          o.namespace,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace: o.clusterResourceNamespace,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			// cert-manager's defaults: a failed issuance is retried after 1h, backing off to 32h.
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building cert-manager's controller context: %w", err)
	}
	base, err := factory.Build()
	if err != nil {
		return nil, fmt.Errorf("building cert-manager's controller context: %w", err)
	}
	c := &controllers{base: base, workers: o.workers, loops: map[string]controllerpkg.Interface{}}
	known := controllerpkg.Known()
	for _, name := range enabledControllers {
		construct, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("cert-manager controller %q is not registered", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return nil, fmt.Errorf("constructing cert-manager controller %q: %w", name, err)
		}
		c.loops[name] = loop
	}
	return c, nil
}

// run starts every controller in g, then the informers they registered, and waits for ctx.
func (c *controllers) run(ctx context.Context, g *errgroup.Group) error {
	log := logf.FromContext(ctx)
	names := make([]string, 0, len(c.loops))
	for name := range c.loops {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		loop := c.loops[name]
		g.Go(func() error {
			log.Info("Starting controller", "controller", name)
			if err := loop.Run(c.workers, ctx); err != nil {
				return fmt.Errorf("cert-manager controller %q: %w", name, err)
			}
			return nil
		})
	}
	// The controllers registered their informers while being constructed; they are started once,
	// after all of them, as cert-manager's controller does.
	c.base.SharedInformerFactory.Start(ctx.Done())
	c.base.KubeSharedInformerFactory.Start(ctx.Done())
	c.base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	<-ctx.Done()
	c.base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	c.base.KubeSharedInformerFactory.Shutdown()
	c.base.SharedInformerFactory.Shutdown()
	return nil
}
