package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
)

// kruiseNamespace is where the tests' kruise runs and keeps revisions.
const kruiseNamespace = "kruise-system"

// sidecarSetNamed is a valid v1beta1 SidecarSet of name selecting app=web,
// injecting container <name>-agent with a volume mount of <name>-data,
// changed by mods.
func sidecarSetNamed(name string, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	ss := &appsv1beta1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1beta1.SidecarContainer{{
				Container: corev1.Container{Name: name + "-agent", Image: "agent:1",
					VolumeMounts: []corev1.VolumeMount{{Name: name + "-data", MountPath: "/data"}}},
				PodInjectPolicy: appsv1beta1.BeforeAppContainerType,
				UpgradeStrategy: appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerColdUpgrade},
			}},
			Volumes: []corev1.Volume{{Name: name + "-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			UpdateStrategy: appsv1beta1.SidecarSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	for _, m := range mods {
		m(ss)
	}
	return ss
}

func logSidecarSet(mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	return sidecarSetNamed("log", mods...)
}

func agent(f func(*appsv1beta1.SidecarContainer)) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) { f(&ss.Spec.Containers[0]) }
}

// sidecarSetRequest is the request of a CREATE of ss (old nil) or an UPDATE
// from old, in version.
func sidecarSetRequest(t *testing.T, version string, ss, old *appsv1beta1.SidecarSet) *admissionv1.AdmissionRequest {
	t.Helper()
	req := workloadRequest(t, "sidecarsets", "SidecarSet", version, ss, old, appsv1alpha1.SidecarSetFromV1beta1)
	req.Namespace = ""
	return req
}

// serveSidecarSets serves the webhook over a cluster holding objects
// (SidecarSets and ControllerRevisions).
func serveSidecarSets(t *testing.T, objects ...runtime.Object) *served {
	t.Helper()
	var sets, revisions []runtime.Object
	for _, o := range objects {
		if _, ok := o.(*appsv1beta1.SidecarSet); ok {
			sets = append(sets, o)
		} else {
			revisions = append(revisions, o)
		}
	}
	return serve(t, SidecarSetWebhook(kruisefake.NewSimpleClientset(sets...).AppsV1beta1(),
		kubefake.NewClientset(revisions...).AppsV1(), kruiseNamespace, nil, nil))
}

func TestSidecarSetWebhookRules(t *testing.T) {
	native := func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{
			Name: "proxy", Image: "proxy:1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(15021)}}},
		}}}
	}
	tests := []struct {
		name string
		ss   *appsv1beta1.SidecarSet
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{name: "valid", ss: logSidecarSet()},
		{name: "HotUpgrade, the empty image the sidecar's own (OpenKruise admits it)", ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
			c.UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: c.Image}
		}))},
		{name: "a native sidecar upgraded by RollingUpdate (OpenKruise refuses it, #1671)", ss: logSidecarSet(native)},
		{name: "a partition over 100% holds every pod back, as OpenKruise admits", ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("150%"))
		})},
		{name: "a volume without a source becomes an emptyDir in the pod", ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{}
		})},
		{
			name: "a name OpenKruise refuses", ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) { ss.Name = "log.v1" }), reason: ReasonInvalidName,
			message: []string{`SidecarSet.apps.kruise.io "log.v1" is invalid: metadata.name: Invalid value: "log.v1": may hold only letters, digits and '-'`},
		},
		{
			name: "a malformed selector",
			ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}
			}),
			reason: ReasonInvalidSelector, message: []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near"`},
		},
		{
			name: "an empty updateStrategy.selector",
			ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{}
			}),
			reason: ReasonInvalidSelector, message: []string{`spec.updateStrategy.selector: Invalid value: "{}": empty`},
		},
		{
			name: "containers a pod would refuse",
			ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.Image = ""
				c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 0}, {Name: "http", ContainerPort: 80, Protocol: "HTTP"}}
				c.Env = []corev1.EnvVar{{Name: "A=B"}, {Name: "C", Value: "x", ValueFrom: &corev1.EnvVarSource{}}}
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "app-logs", MountPath: "/data"})
				c.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("2")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("1")},
				}
			}), func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InitContainers = []appsv1beta1.SidecarContainer{{Container: corev1.Container{Name: "log-agent", Image: "init:1",
					RestartPolicy: ptr.To(corev1.ContainerRestartPolicyOnFailure)}}}
			}),
			reason: ReasonInvalidContainers,
			message: []string{
				`spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure"`,
				`spec.containers[0].name: Duplicate value: "log-agent"`,
				`spec.containers[0].image: Required value`,
				`spec.containers[0].restartPolicy: Forbidden: only init containers take a restartPolicy`,
				`spec.containers[0].ports[0].containerPort: Invalid value: 0`,
				`spec.containers[0].ports[1].name: Duplicate value: "http"`,
				`spec.containers[0].ports[1].protocol: Unsupported value: "HTTP"`,
				`spec.containers[0].env[0].name: Invalid value: "A=B"`,
				`spec.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when ` + "`value`",
				`spec.containers[0].env[1].valueFrom: Invalid value: "": must have exactly one source`,
				`spec.containers[0].volumeMounts[1].name: Not found: "app-logs"`,
				`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`,
				`spec.containers[0].resources.requests[cpu]: Invalid value: "2": must not be more than the limit 1`,
			},
		},
		{
			name: "a run-once init container with a probe",
			ss: logSidecarSet(native, func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InitContainers[0].RestartPolicy = nil
			}),
			reason:  ReasonInvalidContainers,
			message: []string{`spec.initContainers[0].readinessProbe: Forbidden: an init container that runs once`},
		},
		{
			name: "the SidecarSet fields of a container",
			ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.PodInjectPolicy = "Middle"
				c.ShareVolumePolicy.Type = "on"
				c.UpgradeStrategy.UpgradeType = "WarmUpgrade"
				c.TransferEnv = []appsv1beta1.TransferEnvVar{{SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}, EnvName: "NODE"}}
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainersNameRegex: "(", TargetContainersMode: appsv1beta1.TargetContainersModeSum}
			})),
			reason: ReasonInvalidContainers,
			message: []string{
				`spec.containers[0].podInjectPolicy: Unsupported value: "Middle"`,
				`spec.containers[0].shareVolumePolicy.type: Unsupported value: "on"`,
				`spec.containers[0].upgradeStrategy.upgradeType: Unsupported value: "WarmUpgrade"`,
				`spec.containers[0].transferEnv[0].sourceContainerNameFrom.fieldRef.fieldPath: Unsupported value: "spec.nodeName"`,
				`spec.containers[0].resourcesPolicy.targetContainersNameRegex: Invalid value: "("`,
			},
		},
		{
			name: "HotUpgrade without an empty image",
			ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.UpgradeStrategy.UpgradeType = appsv1beta1.SidecarContainerHotUpgrade
			})),
			reason:  ReasonInvalidContainers,
			message: []string{`spec.containers[0].upgradeStrategy.hotUpgradeEmptyImage: Required value: HotUpgrade runs the idle copy`},
		},
		{
			name: "resourcesPolicy on a run-once init container, beside resources",
			ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InitContainers = []appsv1beta1.SidecarContainer{{
					Container: corev1.Container{Name: "setup", Image: "setup:1", Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceCPU: resourceQuantity("1")}}},
					ResourcesPolicy: &appsv1beta1.ResourcesPolicy{TargetContainersNameRegex: ".*"},
				}}
			}),
			reason: ReasonInvalidContainers,
			message: []string{`spec.initContainers[0].resourcesPolicy: Forbidden: only native sidecars`,
				`spec.initContainers[0].resourcesPolicy: Forbidden: resourcesPolicy computes the resources: not together with resources`},
		},
		{
			name: "resourcesPolicy on a container and a native sidecar, with an expression only some pods can compute",
			ss: logSidecarSet(native, func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InitContainers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeMax, TargetContainersNameRegex: "^app-",
					ResourcesExpr: appsv1beta1.ResourcesExpr{Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu - 2", Memory: "MAX(memory*20%, 64Mi)"}},
				}
				ss.Spec.Containers[0].ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeSum, TargetContainersNameRegex: ".*",
					ResourcesExpr: appsv1beta1.ResourcesExpr{Limits: &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%"}},
				}
			}),
		},
		{
			name: "resourcesPolicy: a mode, an empty regex, no expressions",
			ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{TargetContainersMode: "avg"}
			})),
			reason: ReasonInvalidContainers,
			message: []string{`spec.containers[0].resourcesPolicy.targetContainersMode: Unsupported value: "avg"`,
				`spec.containers[0].resourcesPolicy.targetContainersNameRegex: Required value`,
				`spec.containers[0].resourcesPolicy.resourcesExpr: Required value: limits or requests`},
		},
		{
			name: "resourcesPolicy expressions that never compute",
			ss: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.ResourcesPolicy = &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeSum, TargetContainersNameRegex: ".*",
					ResourcesExpr: appsv1beta1.ResourcesExpr{
						Limits:   &appsv1beta1.ResourceExprLimits{CPU: "memory*2", Memory: "2Mi * 3Mi"},
						Requests: &appsv1beta1.ResourceExprRequests{CPU: "max(cpu)", Memory: "memory /"},
					},
				}
			})),
			reason: ReasonInvalidContainers,
			message: []string{
				`spec.containers[0].resourcesPolicy.resourcesExpr.limits.cpu: Invalid value: "memory*2": unknown variable "memory": this expression reads cpu`,
				`spec.containers[0].resourcesPolicy.resourcesExpr.limits.memory: Invalid value: "2Mi * 3Mi": two quantities do not multiply`,
				`spec.containers[0].resourcesPolicy.resourcesExpr.requests.cpu: Invalid value: "max(cpu)": max at offset 0 takes 2 arguments, not 1`,
				`spec.containers[0].resourcesPolicy.resourcesExpr.requests.memory: Invalid value: "memory /": unexpected end of expression`,
			},
		},
		{
			name: "an unknown strategy type, maxUnavailable over 100%, empty priority terms",
			ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.UpdateStrategy.Type = "Rolling"
				ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("150%"))
				ss.Spec.UpdateStrategy.PriorityStrategy = &pubPriority
			}),
			reason: ReasonInvalidUpdateStrategy,
			message: []string{`spec.updateStrategy.type: Unsupported value: "Rolling"`,
				`spec.updateStrategy.maxUnavailable: Invalid value: "150%": must not be more than 100%`,
				`spec.updateStrategy.priorityStrategy.weightPriority[0].matchSelector: Required value`},
		},
		{
			name: "patchPodMetadata: a policy, a duplicate key, a merge patch that is not an object",
			ss: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{
					{Annotations: map[string]string{"a.io/x": "1"}, PatchPolicy: "Replace"},
					{Annotations: map[string]string{"a.io/x": "[1]", "bad key!": "v"}, PatchPolicy: appsv1beta1.SidecarSetMergePatchJsonPatchPolicy},
				}
			}),
			reason: ReasonInvalidPatchPodMetadata,
			message: []string{`spec.patchPodMetadata[0].patchPolicy: Unsupported value: "Replace"`,
				`spec.patchPodMetadata[1].annotations: Invalid value: "bad key!"`,
				`spec.patchPodMetadata[1].annotations[a.io/x]: Duplicate value: "patched by an earlier entry"`,
				`spec.patchPodMetadata[1].annotations[a.io/x]: Invalid value: "[1]": not a JSON object`},
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serveSidecarSets(t).judged(t, sidecarSetRequest(t, version, tt.ss, nil), tt.reason, tt.message...)
			})
		}
	}
}

func TestSidecarSetWebhookUpdates(t *testing.T) {
	hot := agent(func(c *appsv1beta1.SidecarContainer) {
		c.UpgradeStrategy = appsv1beta1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1beta1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
	})
	tests := []struct {
		name     string
		old, new *appsv1beta1.SidecarSet
		reason   string
		message  []string
	}{
		{name: "an image change", old: logSidecarSet(), new: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) { c.Image = "agent:2" }))},
		{
			name: "upgradeType changed", old: logSidecarSet(), new: logSidecarSet(hot), reason: ReasonForbiddenUpdate,
			message: []string{`spec.containers[0].upgradeStrategy.upgradeType: Forbidden: container log-agent was ColdUpgrade`},
		},
		{
			name: "a container added, and one renamed, with its own upgradeType",
			old:  logSidecarSet(),
			new: logSidecarSet(hot, func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.Containers[0].Name = "log-shipper"
				ss.Spec.Containers = append(ss.Spec.Containers, appsv1beta1.SidecarContainer{Container: corev1.Container{Name: "extra", Image: "extra:1"}})
			}),
		},
		{
			name: "an update keeps a problem the stored object had",
			old:  logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) { c.PodInjectPolicy = "Middle" })),
			new: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) {
				c.PodInjectPolicy = "Middle"
				c.Image = "agent:2"
			})),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serveSidecarSets(t, tt.old).judged(t, sidecarSetRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

func TestSidecarSetWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"Undecodable", "ForbiddenUpdate", "InvalidName", "InvalidSelector", "InvalidContainers",
		"InvalidUpdateStrategy", "InvalidPatchPodMetadata", "InvalidCanary", "RevisionNotFound", "PatchPodMetadataNotAllowed", "SidecarSetConflict"},
		SidecarSetWebhook(nil, nil, kruiseNamespace, nil, nil).Reasons)
	assert.Equal(t, "/validate-apps-kruise-io-sidecarset", SidecarSetWebhook(nil, nil, "", nil, nil).Path, "OpenKruise's path")
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// pubPriority has a weight term without a selector.
var pubPriority = pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{Weight: 10}}}
