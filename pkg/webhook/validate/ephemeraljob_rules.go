package validate

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// ephemeralFieldsAllowed are the fields of EphemeralContainerCommon an ephemeral container may
// set (JSON names), as the API server and OpenKruise allow them: no ports, resources, probes or
// lifecycle, nothing the pod would rely on. A field added to the type later is refused unless
// listed here.
var ephemeralFieldsAllowed = map[string]bool{
	"name": true, "image": true, "command": true, "args": true, "workingDir": true, "envFrom": true, "env": true,
	"volumeMounts": true, "volumeDevices": true, "terminationMessagePath": true, "terminationMessagePolicy": true,
	"imagePullPolicy": true, "securityContext": true, "stdin": true, "stdinOnce": true, "tty": true,
}

// checkEphemeralJob is what is wrong with an EphemeralJob's spec: OpenKruise's rules of the
// ephemeral containers, plus a selector that is there and parses, no negative counts, and no
// container that sets the env kruise marks its containers with.
func checkEphemeralJob(spec *appsv1alpha1.EphemeralJobSpec) (selector, template field.ErrorList) {
	spath := field.NewPath("spec")
	if spec.Selector == nil {
		selector = append(selector, field.Required(spath.Child("selector"), "the pods to add the containers to"))
	} else if _, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		selector = append(selector, field.Invalid(spath.Child("selector"), spec.Selector, err.Error()))
	}
	for name, v := range map[string]*int32{"replicas": spec.Replicas, "parallelism": spec.Parallelism, "ttlSecondsAfterFinished": spec.TTLSecondsAfterFinished} {
		if v != nil && *v < 0 {
			template = append(template, field.Invalid(spath.Child(name), *v, "must be greater than or equal to 0"))
		}
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		template = append(template, field.Invalid(spath.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	cpath := spath.Child("template", "ephemeralContainers")
	seen := map[string]bool{}
	for i := range spec.Template.EphemeralContainers {
		template = append(template, checkEphemeralContainer(cpath.Index(i), &spec.Template.EphemeralContainers[i], seen)...)
	}
	return selector, template
}

func checkEphemeralContainer(path *field.Path, ec *corev1.EphemeralContainer, seen map[string]bool) field.ErrorList {
	c := &ec.EphemeralContainerCommon
	errs := checkName(path.Child("name"), c.Name, seen)
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(path.Child("image"), ""))
	case c.Image != strings.TrimSpace(c.Image):
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(path.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(path.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	errs = append(errs, checkEnv(path.Child("env"), c.Env)...)
	for i, e := range c.Env {
		if e.Name == appsv1alpha1.EphemeralContainerEnvKey {
			errs = append(errs, field.Forbidden(path.Child("env").Index(i).Child("name"),
				fmt.Sprintf("%s is set by kruise on the containers it adds, to the job's uid", appsv1alpha1.EphemeralContainerEnvKey)))
		}
	}
	for i, e := range c.EnvFrom {
		if (e.ConfigMapRef == nil) == (e.SecretRef == nil) {
			errs = append(errs, field.Invalid(path.Child("envFrom").Index(i), "", "must have exactly one of configMapRef and secretRef"))
		}
		if e.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Prefix) {
				errs = append(errs, field.Invalid(path.Child("envFrom").Index(i).Child("prefix"), e.Prefix, msg))
			}
		}
	}
	errs = append(errs, checkFieldsAllowed(path, c)...)
	for i, m := range c.VolumeMounts {
		mpath := path.Child("volumeMounts").Index(i)
		if m.SubPath != "" {
			errs = append(errs, field.Forbidden(mpath.Child("subPath"), "cannot be set for an Ephemeral Container"))
		}
		if m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(mpath.Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
		}
	}
	return errs
}

// checkFieldsAllowed refuses each field of c set that ephemeralFieldsAllowed does not list.
func checkFieldsAllowed(path *field.Path, c *corev1.EphemeralContainerCommon) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if ephemeralFieldsAllowed[name] || v.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(path.Child(name), "cannot be set for an Ephemeral Container"))
	}
	return errs
}
