package deletionprotection

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// Path is where the webhook is served.
	Path = "/validate-deletion-protection"
	// Name names it in the webhook server's metrics and logs.
	Name = "deletion-protection"
)

// Lookups reads what the Cascading rules count. Each call is one request's
// read; nothing is cached (deleting a labelled namespace or CRD is rare).
type Lookups interface {
	// Pods lists the pods of namespace.
	Pods(ctx context.Context, namespace string) ([]corev1.Pod, error)
	// Claims lists the PersistentVolumeClaims of namespace.
	Claims(ctx context.Context, namespace string) ([]corev1.PersistentVolumeClaim, error)
	// Objects lists the metadata of every object of gvr, in every namespace.
	Objects(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, error)
}

// Options configure the webhook.
type Options struct {
	Lookups Lookups
	// CRDCascading is the gate DeletionProtectionForCRDCascadingGate (forced
	// off with ResourcesDeletionProtection): off, a Cascading CRD is refused.
	CRDCascading bool
	// Metrics registers namespace_deletion_protection and
	// crd_deletion_protection; nil registers nothing.
	Metrics prometheus.Registerer
}

// Webhook is the deletion-protection webhook of Namespaces and CRDs.
func Webhook(o Options) (server.Webhook, error) {
	m := newMetrics()
	if o.Metrics != nil {
		for _, c := range m.collectors() {
			if err := o.Metrics.Register(c); err != nil {
				return server.Webhook{}, fmt.Errorf("registering the deletion-protection metrics: %w", err)
			}
		}
	}
	return server.Webhook{
		Name:     Name,
		Path:     Path,
		Admitter: &admitter{lookups: o.Lookups, crdCascading: o.CRDCascading, metrics: m},
		Reasons:  []string{ReasonAlways, ReasonNamespaceNotEmpty, ReasonCRDHasObjects, ReasonCRDCascadingGateOff},
	}, nil
}

type admitter struct {
	lookups      Lookups
	crdCascading bool
	metrics      *metrics
}

// Admit judges the DELETE of a Namespace or a CRD; anything else is allowed
// (the webhook configuration sends nothing else).
func (a *admitter) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if req.Operation != admissionv1.Delete || req.SubResource != "" {
		return server.Allowed()
	}
	switch (schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}) {
	case schema.GroupResource{Resource: "namespaces"}:
		return a.namespace(ctx, req)
	case schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}:
		return a.crd(ctx, req)
	}
	return server.Allowed()
}

func (a *admitter) namespace(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	ns := &corev1.Namespace{}
	if err := decodeOld(req, ns); err != nil {
		return server.Errored(err)
	}
	protection := Protection(ns)
	if protection == "" {
		return server.Allowed()
	}
	t := Target{Kind: "Namespace", Resource: "namespaces", Name: ns.Name}
	var children NamespaceChildren
	if protection == Cascading {
		pods, err := a.lookups.Pods(ctx, ns.Name)
		if err != nil {
			return server.Errored(fmt.Errorf("%s: listing the pods of namespace %s: %w", MessagePrefix, ns.Name, err))
		}
		claims, err := a.lookups.Claims(ctx, ns.Name)
		if err != nil {
			return server.Errored(fmt.Errorf("%s: listing the PersistentVolumeClaims of namespace %s: %w", MessagePrefix, ns.Name, err))
		}
		children = CountNamespaceChildren(pods, claims)
	}
	return a.answer(ctx, a.metrics.namespaces, req, ns.Name, DecideNamespace(t, protection, children))
}

func (a *admitter) crd(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := decodeOld(req, crd); err != nil {
		return server.Errored(err)
	}
	protection := Protection(crd)
	if protection == "" {
		return server.Allowed()
	}
	t := Target{Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions." + apiextensionsv1.GroupName, Name: crd.Name}
	if !a.crdCascading {
		return a.answer(ctx, a.metrics.crds, req, crd.Name, DecideCRDGateOff(t, protection))
	}
	objects := 0
	if protection == Cascading {
		n, err := a.countObjects(ctx, crd)
		if err != nil {
			return server.Errored(fmt.Errorf("%s: listing the objects of %s: %w", MessagePrefix, crd.Name, err))
		}
		objects = n
	}
	return a.answer(ctx, a.metrics.crds, req, crd.Name, DecideCRD(t, protection, objects))
}

// countObjects counts crd's objects not being deleted, read through
// ListVersion. A CRD the API server never served has none.
func (a *admitter) countObjects(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	version := ListVersion(crd)
	if version == "" {
		return 0, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	objs, err := a.lookups.Objects(ctx, gvr)
	if apierrors.IsNotFound(err) && !established(crd) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return CountActive(objs), nil
}

// ListVersion is the version to list crd's objects in: the storage version
// if served (as OpenKruise), else any served one (every version lists the
// same objects), else "" (none is served: no client can have made one).
func ListVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	served := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Storage {
			return v.Name
		}
		if served == "" {
			served = v.Name
		}
	}
	return served
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// answer turns d into the webhook's result, counting a refusal under name
// and the requesting user (as OpenKruise's metrics).
func (a *admitter) answer(ctx context.Context, refusals *prometheus.CounterVec, req *admissionv1.AdmissionRequest, name string, d Decision) server.Result {
	if !d.Refused {
		return server.Allowed()
	}
	refusals.WithLabelValues(name, req.UserInfo.Username).Inc()
	klog.FromContext(ctx).V(2).Info("Refused a protected deletion", "reason", d.Reason, "user", req.UserInfo.Username)
	return server.Denied(d.Reason, d.Message)
}

// decodeOld decodes the object being deleted.
func decodeOld(req *admissionv1.AdmissionRequest, into any) error {
	if len(req.OldObject.Raw) == 0 {
		return fmt.Errorf("%s: the request carries no object to judge", MessagePrefix)
	}
	if err := json.Unmarshal(req.OldObject.Raw, into); err != nil {
		return fmt.Errorf("%s: decoding the object: %w", MessagePrefix, err)
	}
	return nil
}
