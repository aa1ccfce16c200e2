package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/webhook/server"
)

const (
	// ResourceDistributionPath is where the API server sends ResourceDistributions: OpenKruise's path.
	ResourceDistributionPath = "/validate-apps-kruise-io-v1alpha1-resourcedistribution"
	// ResourceDistributionWebhookName names it in the webhook server's metrics and logs.
	ResourceDistributionWebhookName = "resourcedistribution-validate"

	// ReasonResourceDistributionDisabled: gate ResourceDistributionGate is off.
	ReasonResourceDistributionDisabled = "ResourceDistributionDisabled"
	// ReasonInvalidResource: spec.resource is not a Secret or ConfigMap that could be created, or
	// an update changes its apiVersion, kind or name.
	ReasonInvalidResource = "InvalidResource"
	// ReasonInvalidTargets: a target namespace name is invalid, a name is both included and
	// excluded, or the label selector does not parse.
	ReasonInvalidTargets = "InvalidTargets"
)

// ResourceDistributionWebhook refuses what OpenKruise v1.9.0 refuses: every ResourceDistribution
// while gate ResourceDistributionGate is off (on is the gate), a resource that is not a core
// Secret or ConfigMap or that the API server would not create (a dry-run create in kruise's
// namespace, as OpenKruise), a change of its apiVersion, kind or name, invalid target namespace
// names, a name both included and excluded, an invalid selector.
func ResourceDistributionWebhook(client kubernetes.Interface, namespace string, on bool) server.Webhook {
	v := &rdValidator{client: client, namespace: namespace, on: on}
	return server.Webhook{Name: ResourceDistributionWebhookName, Path: ResourceDistributionPath, Admitter: server.AdmitFunc(v.admit),
		Reasons: []string{ReasonResourceDistributionDisabled, ReasonUndecodable, ReasonInvalidResource, ReasonInvalidTargets}}
}

type rdValidator struct {
	client    kubernetes.Interface
	namespace string
	on        bool
}

func (v *rdValidator) admit(ctx context.Context, req *admissionv1.AdmissionRequest) server.Result {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" ||
		req.Resource.Group != group || req.Resource.Resource != "resourcedistributions" {
		return server.Allowed()
	}
	if !v.on {
		return server.Result{Reason: ReasonResourceDistributionDisabled, Code: http.StatusForbidden,
			Message: "ResourceDistributions are off in this kruise: feature gate ResourceDistributionGate is not enabled"}
	}
	rd := &appsv1alpha1.ResourceDistribution{}
	if err := json.Unmarshal(req.Object.Raw, rd); err != nil {
		return invalid(ReasonUndecodable, "ResourceDistribution", &rd.ObjectMeta, field.ErrorList{field.Invalid(field.NewPath("spec"),
			field.OmitValueType{}, fmt.Sprintf("does not read as a ResourceDistribution: %v", err))})
	}
	var old *appsv1alpha1.ResourceDistribution
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old = &appsv1alpha1.ResourceDistribution{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			old = nil // the stored object is not ours to judge
		}
	}
	resPath := field.NewPath("spec", "resource")
	res, errs := checkDistributedResource(rd.Spec.Resource.Raw, resPath)
	if len(errs) == 0 && old != nil {
		if prev, perrs := checkDistributedResource(old.Spec.Resource.Raw, resPath); len(perrs) == 0 &&
			(prev.gvk != res.gvk || prev.name != res.name) {
			errs = append(errs, field.Invalid(resPath, res.gvk.String()+" "+res.name, "resource apiVersion, kind, and name are immutable"))
		}
	}
	if len(errs) == 0 {
		if err := v.dryRunCreate(ctx, res); err != nil {
			errs = append(errs, field.Invalid(resPath, field.OmitValueType{}, fmt.Sprintf("failed to dry-run to validate spec.resource, error: %v", err)))
		}
	}
	if len(errs) > 0 {
		return invalid(ReasonInvalidResource, "ResourceDistribution", &rd.ObjectMeta, errs)
	}
	if errs := checkTargets(&rd.Spec.Targets, field.NewPath("spec", "targets")); len(errs) > 0 {
		return invalid(ReasonInvalidTargets, "ResourceDistribution", &rd.ObjectMeta, errs)
	}
	return server.Allowed()
}

// distributedResource is spec.resource as read: its type, name and the typed object.
type distributedResource struct {
	gvk       schema.GroupVersionKind
	name      string
	secret    *corev1.Secret
	configMap *corev1.ConfigMap
}

// checkDistributedResource reads spec.resource: a core Secret or ConfigMap with a valid name.
func checkDistributedResource(raw []byte, path *field.Path) (*distributedResource, field.ErrorList) {
	if len(raw) == 0 {
		return nil, field.ErrorList{field.Required(path, "empty resource is not allowed")}
	}
	var head struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("failed to deserialize resource: %v", err))}
	}
	r := &distributedResource{gvk: schema.FromAPIVersionAndKind(head.APIVersion, head.Kind), name: head.Name}
	if r.gvk.Group != "" || (r.gvk.Kind != "Secret" && r.gvk.Kind != "ConfigMap") {
		return nil, field.ErrorList{field.NotSupported(path.Child("kind"), r.gvk.GroupKind().String(), []string{"Secret", "ConfigMap"})}
	}
	var errs field.ErrorList
	if r.name == "" {
		errs = append(errs, field.Required(path.Child("metadata", "name"), ""))
	}
	for _, msg := range validation.IsDNS1123Subdomain(r.name) {
		if r.name != "" {
			errs = append(errs, field.Invalid(path.Child("metadata", "name"), r.name, msg))
		}
	}
	var err error
	if r.gvk.Kind == "Secret" {
		r.secret = &corev1.Secret{}
		err = json.Unmarshal(raw, r.secret)
	} else {
		r.configMap = &corev1.ConfigMap{}
		err = json.Unmarshal(raw, r.configMap)
	}
	if err != nil {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("does not read as a %s: %v", r.gvk.Kind, err)))
	}
	return r, errs
}

// dryRunCreate asks the API server whether it would create the resource, in kruise's namespace:
// it validates the content exactly (data keys, sizes, a Secret's type) without writing anything.
// An existing object of the name is no objection.
func (v *rdValidator) dryRunCreate(ctx context.Context, r *distributedResource) error {
	ctx, cancel := WithAnswerMargin(ctx)
	defer cancel()
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var err error
	if r.secret != nil {
		s := r.secret.DeepCopy()
		s.Namespace = v.namespace
		_, err = v.client.CoreV1().Secrets(v.namespace).Create(ctx, s, opts)
	} else {
		c := r.configMap.DeepCopy()
		c.Namespace = v.namespace
		_, err = v.client.CoreV1().ConfigMaps(v.namespace).Create(ctx, c, opts)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// checkTargets refuses invalid namespace names, a name both included and excluded, and an
// invalid label selector.
func checkTargets(t *appsv1alpha1.ResourceDistributionTargets, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	included := map[string]bool{}
	for i, n := range t.IncludedNamespaces.List {
		included[n.Name] = true
		for _, msg := range validation.IsDNS1123Label(n.Name) {
			errs = append(errs, field.Invalid(path.Child("includedNamespaces", "list").Index(i).Child("name"), n.Name, msg))
		}
	}
	var both []string
	for i, n := range t.ExcludedNamespaces.List {
		for _, msg := range validation.IsDNS1123Label(n.Name) {
			errs = append(errs, field.Invalid(path.Child("excludedNamespaces", "list").Index(i).Child("name"), n.Name, msg))
		}
		if included[n.Name] {
			both = append(both, n.Name)
		}
	}
	if len(both) > 0 {
		errs = append(errs, field.Invalid(path, both, "ambiguous targets: these namespaces are in both includedNamespaces and excludedNamespaces"))
	}
	if _, err := metav1.LabelSelectorAsSelector(&t.NamespaceLabelSelector); err != nil {
		errs = append(errs, field.Invalid(path.Child("namespaceLabelSelector"), field.OmitValueType{}, err.Error()))
	}
	return errs
}
