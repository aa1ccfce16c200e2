package validate

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// A SidecarSet's containers and volumes are schemaless: they are checked here
// as the API server's pod validation would find them once injected (and
// would then refuse every pod the SidecarSet selects), without depending on
// Kubernetes' own pod validation: the parts a sidecar most often gets wrong
// (names, images, restart policies, ports, env, mounts, resources) and the
// SidecarSet's own fields beside each container. A volumeMount must name a
// volume of the SidecarSet, as in OpenKruise: where the pod has a volume of
// that name, the pod's is kept at injection.

// checkSidecarContainers checks spec's volumes, initContainers and
// containers.
func checkSidecarContainers(spec *appsv1beta1.SidecarSetSpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := checkSidecarVolumes(path.Child("volumes"), spec.Volumes)
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	// Names are unique across both lists, as in a pod.
	seen := map[string]bool{}
	for _, list := range []struct {
		name string
		init bool
		cs   []appsv1beta1.SidecarContainer
	}{{"initContainers", true, spec.InitContainers}, {"containers", false, spec.Containers}} {
		for i := range list.cs {
			errs = append(errs, checkSidecarContainer(path.Child(list.name).Index(i), &list.cs[i], list.init, volumes, seen)...)
		}
	}
	return errs
}

// checkSidecarVolumes: unique DNS-label names, at most one source each (none
// is admitted: the pod's defaulting makes it an emptyDir, where OpenKruise
// refuses it).
func checkSidecarVolumes(path *field.Path, volumes []corev1.Volume) field.ErrorList {
	seen := map[string]bool{}
	var errs field.ErrorList
	for i := range volumes {
		vpath := path.Index(i)
		errs = append(errs, checkName(vpath.Child("name"), volumes[i].Name, seen)...)
		src := reflect.ValueOf(volumes[i].VolumeSource)
		n := 0
		for f := 0; f < src.NumField(); f++ {
			if !src.Field(f).IsNil() {
				n++
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(vpath, "may not have more than one volume source"))
		}
	}
	return errs
}

// checkSidecarContainer checks one container c at path; init tells an init
// container; volumes are the SidecarSet's volume names; seen the container
// names so far.
func checkSidecarContainer(path *field.Path, c *appsv1beta1.SidecarContainer, init bool, volumes, seen map[string]bool) field.ErrorList {
	errs := checkName(path.Child("name"), c.Name, seen)
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), "the pods could not start the sidecar"))
	}
	errs = append(errs, checkSidecarFields(path, c, init)...)
	errs = append(errs, checkRestartPolicy(path, &c.Container, init)...)
	errs = append(errs, checkPorts(path.Child("ports"), c.Ports)...)
	errs = append(errs, checkEnv(path.Child("env"), c.Env)...)
	errs = append(errs, checkMounts(path, &c.Container, volumes)...)
	errs = append(errs, checkResources(path.Child("resources"), &c.Resources)...)
	return errs
}

// checkSidecarFields checks the SidecarSet's fields beside the container:
// their values (the schema has no enums for them), hot upgrade, transferEnv
// and resourcesPolicy.
func checkSidecarFields(path *field.Path, c *appsv1beta1.SidecarContainer, init bool) field.ErrorList {
	var errs field.ErrorList
	switch c.PodInjectPolicy {
	case "", appsv1beta1.BeforeAppContainerType, appsv1beta1.AfterAppContainerType:
	default:
		errs = append(errs, field.NotSupported(path.Child("podInjectPolicy"), c.PodInjectPolicy,
			[]appsv1beta1.PodInjectPolicyType{appsv1beta1.BeforeAppContainerType, appsv1beta1.AfterAppContainerType}))
	}
	for _, p := range []struct {
		name   string
		policy *appsv1beta1.ShareVolumePolicy
	}{{"shareVolumePolicy", &c.ShareVolumePolicy}, {"shareVolumeDevicePolicy", c.ShareVolumeDevicePolicy}} {
		if p.policy == nil {
			continue
		}
		switch p.policy.Type {
		case "", appsv1beta1.ShareVolumePolicyEnabled, appsv1beta1.ShareVolumePolicyDisabled:
		default:
			errs = append(errs, field.NotSupported(path.Child(p.name, "type"), p.policy.Type,
				[]appsv1beta1.ShareVolumePolicyType{appsv1beta1.ShareVolumePolicyEnabled, appsv1beta1.ShareVolumePolicyDisabled}))
		}
	}
	upath := path.Child("upgradeStrategy")
	switch c.UpgradeStrategy.UpgradeType {
	case "", appsv1beta1.SidecarContainerColdUpgrade:
	case appsv1beta1.SidecarContainerHotUpgrade:
		errs = append(errs, checkHotUpgrade(path, c, init)...)
	default:
		errs = append(errs, field.NotSupported(upath.Child("upgradeType"), c.UpgradeStrategy.UpgradeType,
			[]appsv1beta1.SidecarContainerUpgradeType{appsv1beta1.SidecarContainerColdUpgrade, appsv1beta1.SidecarContainerHotUpgrade}))
	}
	for i, t := range c.TransferEnv {
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			errs = append(errs, checkSourceFieldRef(path.Child("transferEnv").Index(i).Child("sourceContainerNameFrom", "fieldRef"),
				t.SourceContainerNameFrom.FieldRef)...)
		}
	}
	if c.ResourcesPolicy != nil {
		errs = append(errs, checkResourcesPolicy(path.Child("resourcesPolicy"), c, init)...)
	}
	return errs
}

// checkHotUpgrade: a HotUpgrade container runs as two, <name>-1 and <name>-2,
// the idle one on hotUpgradeEmptyImage. OpenKruise checks neither rule here,
// but a pod breaking them is refused by the API server at creation: without an
// empty image the idle copy has no image, and both names must be valid
// container names. So they refuse nothing OpenKruise would run, only earlier.
// (upgradeType is immutable: checkUpgradeTypesKept.) Init containers are not
// hot-upgraded: the field is ignored there.
func checkHotUpgrade(path *field.Path, c *appsv1beta1.SidecarContainer, init bool) field.ErrorList {
	if init {
		return nil
	}
	epath := path.Child("upgradeStrategy", "hotUpgradeEmptyImage")
	var errs field.ErrorList
	if c.UpgradeStrategy.HotUpgradeEmptyImage == "" {
		errs = append(errs, field.Required(epath, "HotUpgrade runs the idle copy of the sidecar on this image"))
	}
	if c.Name != "" {
		for _, msg := range validation.IsDNS1123Label(c.Name + "-1") {
			errs = append(errs, field.Invalid(path.Child("name"), c.Name, "injected as "+c.Name+"-1 and -2 (HotUpgrade): "+msg))
		}
	}
	return errs
}

// checkRestartPolicy: a pod takes a container restartPolicy on init
// containers only, and then only Always (a native sidecar); probes and
// lifecycle hooks only on containers that keep running.
func checkRestartPolicy(path *field.Path, c *corev1.Container, init bool) field.ErrorList {
	rpath := path.Child("restartPolicy")
	switch {
	case !init && c.RestartPolicy != nil:
		return field.ErrorList{field.Forbidden(rpath, "only init containers take a restartPolicy (Always: a native sidecar)")}
	case init && c.RestartPolicy != nil && !sidecarrules.IsNative(*c):
		return field.ErrorList{field.NotSupported(rpath, *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways})}
	case !init || sidecarrules.IsNative(*c):
		return nil
	}
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		set  bool
	}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil},
		{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
		if f.set {
			errs = append(errs, field.Forbidden(path.Child(f.name), "an init container that runs once (no restartPolicy: Always) may not have it"))
		}
	}
	return errs
}

// checkSourceFieldRef: the pod field naming the container to copy env from:
// its name, or one label or annotation (OpenKruise's list).
func checkSourceFieldRef(path *field.Path, ref *corev1.ObjectFieldSelector) field.ErrorList {
	if ref.APIVersion == "" {
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	}
	fpath := path.Child("fieldPath")
	switch ref.FieldPath {
	case "metadata.name", "metadata.labels", "metadata.annotations":
		return nil
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		key, ok := subscript(ref.FieldPath, prefix)
		if !ok {
			continue
		}
		if prefix == "metadata.annotations" {
			key = strings.ToLower(key)
		}
		var errs field.ErrorList
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(fpath, ref.FieldPath, msg))
		}
		return errs
	}
	return field.ErrorList{field.NotSupported(fpath, ref.FieldPath,
		[]string{"metadata.name", "metadata.labels['<key>']", "metadata.annotations['<key>']"})}
}

// subscript is key of "<prefix>['<key>']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// checkResourcesPolicy: only on a container that keeps running (a
// container, or a native sidecar), not beside resources, a known mode, a
// regular expression that compiles, limits or requests, and expressions that
// parse and can be computed for some containers: what OpenKruise's webhook
// refuses (sidecarset.ParseResourceExpr says where it is looser).
func checkResourcesPolicy(path *field.Path, c *appsv1beta1.SidecarContainer, init bool) field.ErrorList {
	var errs field.ErrorList
	p := c.ResourcesPolicy
	if init && !sidecarrules.IsNative(c.Container) {
		errs = append(errs, field.Forbidden(path, "only native sidecars (restartPolicy: Always) among initContainers take a resourcesPolicy"))
	}
	if len(c.Resources.Limits)+len(c.Resources.Requests) > 0 {
		errs = append(errs, field.Forbidden(path, "resourcesPolicy computes the resources: not together with resources"))
	}
	switch p.TargetContainersMode {
	case appsv1beta1.TargetContainersModeSum, appsv1beta1.TargetContainersModeMax:
	default:
		errs = append(errs, field.NotSupported(path.Child("targetContainersMode"), p.TargetContainersMode,
			[]appsv1beta1.TargetContainersModeType{appsv1beta1.TargetContainersModeSum, appsv1beta1.TargetContainersModeMax}))
	}
	if p.TargetContainersNameRegex == "" {
		errs = append(errs, field.Required(path.Child("targetContainersNameRegex"), "a regular expression (the default is .*)"))
	} else if _, err := regexp.Compile(p.TargetContainersNameRegex); err != nil {
		errs = append(errs, field.Invalid(path.Child("targetContainersNameRegex"), p.TargetContainersNameRegex, err.Error()))
	}
	epath := path.Child("resourcesExpr")
	if p.ResourcesExpr.Limits == nil && p.ResourcesExpr.Requests == nil {
		errs = append(errs, field.Required(epath, "limits or requests: without either it computes nothing"))
	}
	var exprs []resourceExpr
	if l := p.ResourcesExpr.Limits; l != nil {
		exprs = append(exprs, resourceExpr{epath.Child("limits", "cpu"), "cpu", l.CPU}, resourceExpr{epath.Child("limits", "memory"), "memory", l.Memory})
	}
	if r := p.ResourcesExpr.Requests; r != nil {
		exprs = append(exprs, resourceExpr{epath.Child("requests", "cpu"), "cpu", r.CPU}, resourceExpr{epath.Child("requests", "memory"), "memory", r.Memory})
	}
	for _, x := range exprs {
		if x.src == "" {
			continue // this resource is left unset
		}
		if _, err := sidecarrules.ParseResourceExpr(x.src, x.variable); err != nil {
			errs = append(errs, field.Invalid(x.path, x.src, err.Error()))
		}
	}
	return errs
}

// resourceExpr is one expression of a resourcesPolicy, over variable.
type resourceExpr struct {
	path     *field.Path
	variable string
	src      string
}

// checkResources: no request above its limit, which the pod validation
// refuses.
func checkResources(path *field.Path, r *corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must not be more than the limit %s", limit.String())))
		}
	}
	return errs
}
