package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/controller/sidecarterminator"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	tNow      = metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	tHourAgo  = metav1.NewTime(tNow.Add(-time.Hour))
	tMinAgo   = metav1.NewTime(tNow.Add(-time.Minute))
	managedFs = []metav1.ManagedFieldsEntry{{
		Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &tNow,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{}}}`)},
	}}
)

// fullPod is a Job pod as the API server returns it: a main container that
// has exited, a marked sidecar still running, an init container, and the
// usual volumes, probes, resources, scheduling constraints, annotations and
// status details.
func fullPod() *corev1.Pod {
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	var env []corev1.EnvVar
	for i := range 20 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%d", i), Value: fmt.Sprintf("value-%d-with-some-length", i)})
	}
	env = append(env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "batch-42-xk2p9", GenerateName: "batch-42-", Namespace: "jobs", UID: "pod-uid-1",
			ResourceVersion: "123456", Generation: 1, CreationTimestamp: tHourAgo,
			Labels: map[string]string{
				"app": "batch", "batch.kubernetes.io/job-name": "batch-42", "batch.kubernetes.io/controller-uid": "job-uid-1",
				"type": "worker",
			},
			Annotations: map[string]string{
				sidecarterminator.AnnotationTerminatedAt:           tNow.Format(time.RFC3339Nano),
				"kruise.io/some-flag":                              "on",
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"batch"},"spec":{"containers":[{"name":"main","image":"registry.example.com/team/batch:1.2.3"}]}}`,
				"prometheus.io/scrape":                             "true",
				"cni.projectcalico.org/podIP":                      "10.1.2.3/32",
				"notkruise.io/x":                                   "dropped: not a kruise.io domain",
				corev1.PodDeletionCost:                             "-100",
				// A PodProbeMarker set game.io/state and recorded it.
				nodeprobe.MarksAnnotation: `{"game#idle":{"labels":["type"],"annotations":["game.io/state"]}}`,
				"game.io/state":           "idle",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "batch-42", UID: "job-uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
			ManagedFields:   managedFs,
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
			InitContainers: []corev1.Container{{
				Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo init"},
				Env: []corev1.EnvVar{{Name: sidecarterminator.EnvTerminateSidecar, Value: "true"}}, Resources: resources,
			}},
			Containers: []corev1.Container{
				{
					Name: "main", Image: "registry.example.com/team/batch:1.2.3", Command: []string{"/bin/batch"}, Args: []string{"--shard=42"},
					// Admitted with launch priority: main waits for proxy.
					Env:       append(append([]corev1.EnvVar{}, env...), lp.BarrierEnv("batch-42-xk2p9-barrier", 0)),
					EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "batch-config"}}}},
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Resources: resources, VolumeMounts: mounts, LivenessProbe: probe, ReadinessProbe: probe,
					Lifecycle:                &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 5"}}}},
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
				{
					Name: "proxy", Image: "registry.example.com/mesh/proxy:2.0",
					Env: append([]corev1.EnvVar{
						{Name: "PROXY_MODE", Value: "sidecar"},
						{Name: sidecarterminator.EnvTerminateSidecar, Value: "true"},
						{Name: "PROXY_ADMIN_PORT", Value: "15000"},
						{Name: sidecarterminator.EnvTerminateSidecarWithImage, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "exit-image"}}},
					}, append(append([]corev1.EnvVar{}, env...), corev1.EnvVar{Name: lp.EnvPriority, Value: "1"})...),
					Ports:        []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000}},
					Resources:    resources,
					VolumeMounts: mounts,
				},
			},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(int64(45)),
			ActiveDeadlineSeconds:         ptr.To(int64(3600)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			NodeSelector:                  map[string]string{"pool": "batch"},
			ServiceAccountName:            "batch",
			NodeName:                      "node-a",
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To(int64(2000))},
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry-creds"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}},
			}}},
			SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
			},
			Priority:           ptr.To(int32(0)),
			EnableServiceLinks: ptr.To(true),
			PreemptionPolicy:   ptr.To(corev1.PreemptLowerPriority),
			ReadinessGates:     []corev1.PodReadinessGate{{ConditionType: appsv1alpha1.KruisePodReadyConditionType}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: tHourAgo},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [main]", LastTransitionTime: tMinAgo},
				{Type: appsv1alpha1.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Reason: "ContainerRecreating", Message: "ContainerRecreateRequest x is recreating containers", LastTransitionTime: tMinAgo},
				{Type: sidecarterminator.ConditionSidecarTerminated, Status: corev1.ConditionTrue, Reason: "MainContainersSucceeded", LastTransitionTime: tNow},
			},
			Message:   "",
			HostIP:    "192.168.0.10",
			HostIPs:   []corev1.HostIP{{IP: "192.168.0.10"}},
			PodIP:     "10.1.2.3",
			PodIPs:    []corev1.PodIP{{IP: "10.1.2.3"}},
			StartTime: &tHourAgo,
			InitContainerStatuses: []corev1.ContainerStatus{{
				Name: "init", Image: "docker.io/library/busybox:1.36", ImageID: "docker.io/library/busybox@sha256:" + sha(1), ContainerID: "containerd://" + sha(2),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: tHourAgo}},
			}},
			ContainerStatuses: []corev1.ContainerStatus{
				{
					Name: "main", Image: "registry.example.com/team/batch:1.2.3", ImageID: "registry.example.com/team/batch@sha256:" + sha(3),
					ContainerID: "containerd://" + sha(4), RestartCount: 1, Started: ptr.To(false),
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 0, Reason: "Completed", Message: "batch done: 10000 records written\n...many lines of log...",
						StartedAt: tHourAgo, FinishedAt: tMinAgo, ContainerID: "containerd://" + sha(4),
					}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "earlier failure"}},
					VolumeMounts:         []corev1.VolumeMountStatus{{Name: "data", MountPath: "/data"}},
					Resources:            &resources,
					AllocatedResources:   resources.Requests,
				},
				{
					Name: "proxy", Image: "registry.example.com/mesh/proxy:2.0", ImageID: "registry.example.com/mesh/proxy@sha256:" + sha(5),
					ContainerID: "containerd://" + sha(6), Ready: true, Started: ptr.To(true),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: tHourAgo}},
				},
			},
			QOSClass: corev1.PodQOSBurstable,
		},
	}
}

// sha is a fake 64-hex digest.
func sha(i int) string { return fmt.Sprintf("%064x", i) }

// fullNode is a node as the kubelet reports it, with n images.
func fullNode(n int) *corev1.Node {
	images := make([]corev1.ContainerImage, n)
	for i := range images {
		repo := fmt.Sprintf("registry.example.com/team-%d/service-%d", i%17, i)
		images[i] = corev1.ContainerImage{Names: []string{repo + "@sha256:" + sha(i), repo + ":v1." + fmt.Sprint(i)}, SizeBytes: int64(50_000_000 + i)}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-a", UID: "node-uid-1", ResourceVersion: "98765", CreationTimestamp: tHourAgo,
			Labels: map[string]string{
				"kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"topology.kubernetes.io/zone": "a", "pool": "batch", "type": "virtual-kubelet",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid":                        `{"ebs.csi.aws.com":"i-0123456789abcdef0"}`,
				"apps.kruise.io/node-note":                               "kept: kruise's own",
			},
			ManagedFields: managedFs,
		},
		Spec: corev1.NodeSpec{
			PodCIDR: "10.1.2.0/24", PodCIDRs: []string{"10.1.2.0/24"}, ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0",
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
			Unschedulable: true,
		},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: tNow},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: tNow},
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.10"}, {Type: corev1.NodeHostName, Address: "node-a"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: sha(7)[:32], SystemUUID: "ec2a1b2c", BootID: sha(8)[:32], KernelVersion: "6.1.0-18-amd64",
				OSImage: "Debian GNU/Linux 12", ContainerRuntimeVersion: "containerd://1.7.24", KubeletVersion: "v1.34.0",
				OperatingSystem: "linux", Architecture: "amd64",
			},
			Images:          images,
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs.csi.aws.com^vol-1"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs.csi.aws.com^vol-1", DevicePath: "/dev/xvdba"}},
			RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(true)}}},
		},
	}
}

// field is one field of a cached object: who reads it and how to get it.
type field[T any] struct {
	name   string
	reader string
	get    func(T) any
}

// podKept are the pod fields the controllers read from the cache (grep of
// pkg/controller for uses of the pod listers and informers' objects).
var podKept = []field[*corev1.Pod]{
	{"metadata.name", "all (keys, Events, patches)", func(p *corev1.Pod) any { return p.Name }},
	{"metadata.namespace", "all (keys, listers by namespace)", func(p *corev1.Pod) any { return p.Namespace }},
	{"metadata.uid", "sidecarterminator (patch precondition, CRR name, memory), recreate (pod replaced?)", func(p *corev1.Pod) any { return p.UID }},
	{"metadata.resourceVersion", "podreadiness (patch precondition), informer, Events", func(p *corev1.Pod) any { return p.ResourceVersion }},
	{"metadata.creationTimestamp", "identity", func(p *corev1.Pod) any { return p.CreationTimestamp }},
	{"metadata.labels", "imagepulljob podSelector", func(p *corev1.Pod) any { return p.Labels }},
	{"metadata.annotations[sidecar-terminated-at]", "sidecarterminator cacheBehind", func(p *corev1.Pod) any {
		return p.Annotations[sidecarterminator.AnnotationTerminatedAt]
	}},
	{"metadata.annotations[kruise.io/*]", "kruise's own", func(p *corev1.Pod) any { return p.Annotations["kruise.io/some-flag"] }},
	{"metadata.annotations[podprobemarker-marks]", "nodepodprobe (what it set)", func(p *corev1.Pod) any { return p.Annotations[nodeprobe.MarksAnnotation] }},
	{"metadata.annotations[recorded marks]", "nodepodprobe (compares and removes the annotations it recorded)", func(p *corev1.Pod) any { return p.Annotations["game.io/state"] }},
	{"metadata.annotations[pod-deletion-cost]", "workloadspread (writes it only where it differs)", func(p *corev1.Pod) any { return p.Annotations[corev1.PodDeletionCost] }},
	{"metadata.ownerReferences", "ownership (small)", func(p *corev1.Pod) any { return p.OwnerReferences }},
	{"metadata.generateName", "pubscope eviction name patterns (small)", func(p *corev1.Pod) any { return p.GenerateName }},
	{"metadata.finalizers", "ownership (small)", func(p *corev1.Pod) any { return p.Finalizers }},
	{"spec.nodeName", "sidecarterminator, recreate podUpdated, imagepulljob", func(p *corev1.Pod) any { return p.Spec.NodeName }},
	{"spec.restartPolicy", "sidecarterminator enqueuePod/decide", func(p *corev1.Pod) any { return p.Spec.RestartPolicy }},
	{"spec.terminationGracePeriodSeconds", "sidecarterminator followUp", func(p *corev1.Pod) any { return p.Spec.TerminationGracePeriodSeconds }},
	{"spec.readinessGates", "podreadiness needsCondition (readinessgate.Declared)", func(p *corev1.Pod) any { return p.Spec.ReadinessGates }},
	{"spec.containers[].name", "sidecarterminator classify, containerStatus", func(p *corev1.Pod) any {
		return []string{p.Spec.Containers[0].Name, p.Spec.Containers[1].Name}
	}},
	{"spec.containers[].image", "sidecarterminator specImage", func(p *corev1.Pod) any {
		return []string{p.Spec.Containers[0].Image, p.Spec.Containers[1].Image}
	}},
	{"spec.containers[].env[marking]", "sidecarterminator hasMarking/classify (value, valueFrom set)", func(p *corev1.Pod) any {
		var out []corev1.EnvVar
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == sidecarterminator.EnvTerminateSidecar || e.Name == sidecarterminator.EnvTerminateSidecarWithImage {
					out = append(out, e)
				}
			}
		}
		return out
	}},
	{"spec.containers[].env[launch priority]", "launchpriority planOf (barrier valueFrom), topPriority (priority value)", func(p *corev1.Pod) any {
		var out []corev1.EnvVar
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == lp.EnvBarrier || e.Name == lp.EnvPriority {
					out = append(out, e)
				}
			}
		}
		return out
	}},
	{"status.startTime", "launchpriority waiting (when a slow container is reported)", func(p *corev1.Pod) any { return p.Status.StartTime }},
	{"metadata.deletionTimestamp", "sidecarterminator decide, recreate podUpdated, podreadiness", func(p *corev1.Pod) any { return p.DeletionTimestamp }},
	{"status.phase", "sidecarterminator, recreate podUpdated, imagepulljob podTerminal, podreadiness", func(p *corev1.Pod) any { return p.Status.Phase }},
	{"status.conditions", "sidecarterminator recorded/conditionTime, recreate markedByUs, podreadiness", func(p *corev1.Pod) any { return p.Status.Conditions }},
	{"status.containerStatuses[].name", "sidecarterminator", func(p *corev1.Pod) any {
		return []string{p.Status.ContainerStatuses[0].Name, p.Status.ContainerStatuses[1].Name}
	}},
	{"status.containerStatuses[].containerID", "sidecarterminator createCRR", func(p *corev1.Pod) any {
		return []string{p.Status.ContainerStatuses[0].ContainerID, p.Status.ContainerStatuses[1].ContainerID}
	}},
	{"status.containerStatuses[].state.terminated.exitCode", "sidecarterminator decide/followUp", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[0].State.Terminated.ExitCode + 7 // +7: the exit code is 0
	}},
	{"status.containerStatuses[].state.terminated.finishedAt", "sidecarterminator followUp", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[0].State.Terminated.FinishedAt
	}},
	{"status.containerStatuses[].state.running", "sidecarterminator (terminated == nil)", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[1].State.Running
	}},
	{"status.containerStatuses[].restartCount", "recreate fillContainer (live pod today; kept, tiny)", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[0].RestartCount
	}},
	{"status.podIP", "podprobemarker (the NodePodProbe entry's IP)", func(p *corev1.Pod) any { return p.Status.PodIP }},
	{"spec.containers[].ports[named].name/containerPort", "podprobemarker resolvePorts (a probe's named port)", func(p *corev1.Pod) any {
		return []any{p.Spec.Containers[0].Ports[0].Name, p.Spec.Containers[0].Ports[0].ContainerPort}
	}},
}

// podDropped are fields no controller reads from the cache.
var podDropped = []field[*corev1.Pod]{
	{"metadata.managedFields", "", func(p *corev1.Pod) any { return p.ManagedFields }},
	{"metadata.annotations[last-applied-configuration]", "", func(p *corev1.Pod) any {
		return p.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
	}},
	{"metadata.annotations[prometheus.io/scrape]", "", func(p *corev1.Pod) any { return p.Annotations["prometheus.io/scrape"] }},
	{"metadata.annotations[notkruise.io/x]", "", func(p *corev1.Pod) any { return p.Annotations["notkruise.io/x"] }},
	{"spec.volumes", "", func(p *corev1.Pod) any { return p.Spec.Volumes }},
	{"spec.initContainers", "", func(p *corev1.Pod) any { return p.Spec.InitContainers }},
	{"spec.affinity", "", func(p *corev1.Pod) any { return p.Spec.Affinity }},
	{"spec.tolerations", "", func(p *corev1.Pod) any { return p.Spec.Tolerations }},
	{"spec.nodeSelector", "", func(p *corev1.Pod) any { return p.Spec.NodeSelector }},
	{"spec.securityContext", "", func(p *corev1.Pod) any { return p.Spec.SecurityContext }},
	{"spec.imagePullSecrets", "", func(p *corev1.Pod) any { return p.Spec.ImagePullSecrets }},
	{"spec.serviceAccountName", "", func(p *corev1.Pod) any { return p.Spec.ServiceAccountName }},
	{"spec.activeDeadlineSeconds", "", func(p *corev1.Pod) any { return p.Spec.ActiveDeadlineSeconds }},
	{"spec.containers[].command/args", "", func(p *corev1.Pod) any { return append(p.Spec.Containers[0].Command, p.Spec.Containers[0].Args...) }},
	{"spec.containers[].env[other]", "", func(p *corev1.Pod) any {
		var out []string
		for _, c := range p.Spec.Containers {
			for _, e := range c.Env {
				switch e.Name {
				case sidecarterminator.EnvTerminateSidecar, sidecarterminator.EnvTerminateSidecarWithImage, lp.EnvBarrier, lp.EnvPriority:
				default:
					out = append(out, e.Name)
				}
			}
		}
		return out
	}},
	{"spec.containers[].envFrom", "", func(p *corev1.Pod) any { return p.Spec.Containers[0].EnvFrom }},
	{"spec.containers[].resources", "", func(p *corev1.Pod) any { return p.Spec.Containers[0].Resources }},
	{"spec.containers[].ports[].protocol", "recreate reads the ports from the live pod", func(p *corev1.Pod) any { return p.Spec.Containers[0].Ports[0].Protocol }},
	{"spec.containers[].lifecycle", "recreate reads it from the live pod", func(p *corev1.Pod) any { return p.Spec.Containers[0].Lifecycle }},
	{"spec.containers[].volumeMounts", "", func(p *corev1.Pod) any { return p.Spec.Containers[0].VolumeMounts }},
	{"spec.containers[].probes", "", func(p *corev1.Pod) any { return p.Spec.Containers[0].LivenessProbe }},
	{"status.podIPs", "", func(p *corev1.Pod) any { return p.Status.PodIPs }},
	{"status.hostIP", "", func(p *corev1.Pod) any { return p.Status.HostIP }},
	{"status.hostIPs", "", func(p *corev1.Pod) any { return p.Status.HostIPs }},
	{"status.qosClass", "", func(p *corev1.Pod) any { return p.Status.QOSClass }},
	{"status.initContainerStatuses", "", func(p *corev1.Pod) any { return p.Status.InitContainerStatuses }},
	{"status.containerStatuses[].image/imageID", "", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[0].Image + p.Status.ContainerStatuses[0].ImageID
	}},
	{"status.containerStatuses[].lastState", "", func(p *corev1.Pod) any { return p.Status.ContainerStatuses[0].LastTerminationState.Terminated }},
	{"status.containerStatuses[].state.terminated.message", "", func(p *corev1.Pod) any {
		return p.Status.ContainerStatuses[0].State.Terminated.Message
	}},
	{"status.containerStatuses[].resources", "", func(p *corev1.Pod) any { return p.Status.ContainerStatuses[0].Resources }},
	{"status.containerStatuses[].volumeMounts", "", func(p *corev1.Pod) any { return p.Status.ContainerStatuses[0].VolumeMounts }},
}

// nodeKept are the node fields the controllers read from the cache.
var nodeKept = []field[*corev1.Node]{
	{"metadata.name", "nodeimage (NodeImage name), sidecarterminator (lister key)", func(n *corev1.Node) any { return n.Name }},
	{"metadata.uid", "nodeimage (owner reference, nodeUpdated)", func(n *corev1.Node) any { return n.UID }},
	{"metadata.resourceVersion", "informer, Events", func(n *corev1.Node) any { return n.ResourceVersion }},
	{"metadata.labels", "nodeimage copies them all; type=virtual-kubelet read by nodeimage and sidecarterminator", func(n *corev1.Node) any { return n.Labels }},
	{"metadata.annotations[apps.kruise.io/*]", "kruise's own", func(n *corev1.Node) any { return n.Annotations["apps.kruise.io/node-note"] }},
	{"status.conditions", "nodeimage isReady", func(n *corev1.Node) any { return n.Status.Conditions }},
	{"spec.taints", "daemonset NodeEligibility, broadcastjob Fits", func(n *corev1.Node) any { return n.Spec.Taints }},
	{"spec.unschedulable", "broadcastjob Fits (cordoned nodes)", func(n *corev1.Node) any { return n.Spec.Unschedulable }},
	{"status.allocatable", "broadcastjob Fits (requests)", func(n *corev1.Node) any { return n.Status.Allocatable }},
}

var nodeDropped = []field[*corev1.Node]{
	{"metadata.managedFields", "", func(n *corev1.Node) any { return n.ManagedFields }},
	{"metadata.annotations[other]", "", func(n *corev1.Node) any { return n.Annotations["csi.volume.kubernetes.io/nodeid"] }},
	{"spec.podCIDRs", "", func(n *corev1.Node) any { return n.Spec.PodCIDRs }},
	{"spec.providerID", "", func(n *corev1.Node) any { return n.Spec.ProviderID }},
	{"status.images", "", func(n *corev1.Node) any { return n.Status.Images }},
	{"status.capacity", "", func(n *corev1.Node) any { return n.Status.Capacity }},
	{"status.addresses", "", func(n *corev1.Node) any { return n.Status.Addresses }},
	{"status.daemonEndpoints", "", func(n *corev1.Node) any { return n.Status.DaemonEndpoints }},
	{"status.nodeInfo", "", func(n *corev1.Node) any { return n.Status.NodeInfo }},
	{"status.volumesInUse", "", func(n *corev1.Node) any { return n.Status.VolumesInUse }},
	{"status.volumesAttached", "", func(n *corev1.Node) any { return n.Status.VolumesAttached }},
	{"status.runtimeHandlers", "", func(n *corev1.Node) any { return n.Status.RuntimeHandlers }},
}

func checkFields[T any](t *testing.T, full, lean T, kept, dropped []field[T]) {
	t.Helper()
	for _, f := range kept {
		t.Run("keeps "+f.name, func(t *testing.T) {
			require.NotEmpty(t, f.get(full), "the test object must set %s", f.name)
			assert.Equal(t, f.get(full), f.get(lean), "%s is read by %s", f.name, f.reader)
		})
	}
	for _, f := range dropped {
		t.Run("drops "+f.name, func(t *testing.T) {
			require.NotEmpty(t, f.get(full), "the test object must set %s", f.name)
			assert.Empty(t, f.get(lean), "%s is read by no controller from the cache", f.name)
		})
	}
}

func TestTransformPod(t *testing.T) {
	full := fullPod()
	full.DeletionTimestamp = &tNow
	full.DeletionGracePeriodSeconds = ptr.To(int64(45))
	before := full.DeepCopy()

	out, err := transformObject(full)
	require.NoError(t, err)
	lean, ok := out.(*corev1.Pod)
	require.True(t, ok, "a *Pod comes out: %T", out)
	assert.Equal(t, before, full, "the argument is not modified")
	checkFields(t, full, lean, podKept, podDropped)

	// The exact result: anything else kept would be a field nobody reads.
	assert.Equal(t, &corev1.Pod{
		TypeMeta: full.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: full.Name, GenerateName: full.GenerateName, Namespace: full.Namespace, UID: full.UID, ResourceVersion: full.ResourceVersion,
			Generation: 1, CreationTimestamp: tHourAgo, DeletionTimestamp: &tNow, DeletionGracePeriodSeconds: ptr.To(int64(45)),
			Labels: full.Labels,
			Annotations: map[string]string{
				sidecarterminator.AnnotationTerminatedAt: full.Annotations[sidecarterminator.AnnotationTerminatedAt],
				corev1.PodDeletionCost:                   "-100",
				"kruise.io/some-flag":                    "on",
				nodeprobe.MarksAnnotation:                full.Annotations[nodeprobe.MarksAnnotation],
				"game.io/state":                          "idle",
			},
			OwnerReferences: full.OwnerReferences, Finalizers: full.Finalizers,
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "main", Image: "registry.example.com/team/batch:1.2.3", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env: []corev1.EnvVar{lp.BarrierEnv("batch-42-xk2p9-barrier", 0)}},
				{Name: "proxy", Image: "registry.example.com/mesh/proxy:2.0", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 15000}}, Env: []corev1.EnvVar{
					{Name: sidecarterminator.EnvTerminateSidecar, Value: "true"},
					{Name: sidecarterminator.EnvTerminateSidecarWithImage, ValueFrom: full.Spec.Containers[1].Env[3].ValueFrom},
					{Name: lp.EnvPriority, Value: "1"},
				}},
			},
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(45)),
			NodeName: "node-a", ReadinessGates: full.Spec.ReadinessGates,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, Conditions: full.Status.Conditions, StartTime: &tHourAgo, PodIP: full.Status.PodIP,
			ContainerStatuses: []corev1.ContainerStatus{
				{
					Name: "main", ContainerID: "containerd://" + sha(4), RestartCount: 1, Started: ptr.To(false),
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 0, Reason: "Completed", StartedAt: tHourAgo, FinishedAt: tMinAgo, ContainerID: "containerd://" + sha(4),
					}},
				},
				{
					Name: "proxy", ContainerID: "containerd://" + sha(6), Ready: true, Started: ptr.To(true),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: tHourAgo}},
				},
			},
		},
	}, lean)
}

func TestTransformKeepsKruiseWorkloadPodsWhole(t *testing.T) {
	full := fullPod()
	full.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "cs", Controller: ptr.To(true)}}
	before := full.DeepCopy()

	out, err := transformObject(full)
	require.NoError(t, err)
	kept, ok := out.(*corev1.Pod)
	require.True(t, ok, "a *Pod comes out: %T", out)
	want := before.DeepCopy()
	want.ManagedFields = nil
	assert.Equal(t, want, kept, "a CloneSet's pod loses its managedFields only")

	// A pod a kruise workload only owns, without controlling it, is lean as any other.
	full = fullPod()
	full.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "web", UID: "cs"}}
	out, err = transformObject(full)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Pod).Spec.Volumes, "not controlled by a kruise workload: lean")
}

func TestTransformNode(t *testing.T) {
	full := fullNode(300)
	before := full.DeepCopy()
	out, err := transformObject(full)
	require.NoError(t, err)
	lean, ok := out.(*corev1.Node)
	require.True(t, ok, "a *Node comes out: %T", out)
	assert.Equal(t, before, full, "the argument is not modified")
	checkFields(t, full, lean, nodeKept, nodeDropped)
	assert.Equal(t, &corev1.Node{
		TypeMeta: full.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-a", UID: "node-uid-1", ResourceVersion: "98765", CreationTimestamp: tHourAgo,
			Labels: full.Labels, Annotations: map[string]string{"apps.kruise.io/node-note": "kept: kruise's own"},
		},
		Spec:   corev1.NodeSpec{Taints: full.Spec.Taints, Unschedulable: true},
		Status: corev1.NodeStatus{Conditions: full.Status.Conditions, Allocatable: full.Status.Allocatable},
	}, lean)
}

// Every other cached type keeps everything but managedFields: the kruise
// kinds and Secrets are sent back in Updates.
func TestTransformOtherTypesOnlyLoseManagedFields(t *testing.T) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "creds", Namespace: "team", UID: "s1", ResourceVersion: "5",
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
			ManagedFields: managedFs,
		},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	}
	crr := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "crr", Namespace: "team", Annotations: map[string]string{"x": "y"}, ManagedFields: managedFs},
		Spec:       appsv1alpha1.ContainerRecreateRequestSpec{PodName: "p", Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "c"}}},
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-daemon-node-a", Namespace: "kruise-system", ManagedFields: managedFs},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: tNow.Time}},
	}
	tests := []struct {
		name string
		obj  metav1.Object
		copy func() metav1.Object
	}{
		{"secret", secret, func() metav1.Object { return secret.DeepCopy() }},
		{"crr", crr, func() metav1.Object { return crr.DeepCopy() }},
		{"lease", lease, func() metav1.Object { return lease.DeepCopy() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.copy()
			want.SetManagedFields(nil)
			out, err := transformObject(tc.obj)
			require.NoError(t, err)
			assert.Equal(t, want, out)
			// The freshly decoded object is no one else's: cleared in
			// place, no copy.
			assert.Same(t, tc.obj, out)

			again, err := transformObject(out)
			require.NoError(t, err)
			assert.Same(t, out, again)
			assert.Equal(t, want, again)
		})
	}
}

func TestTransformIdempotent(t *testing.T) {
	for _, obj := range []any{fullPod(), fullNode(30), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managedFs}}} {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			once, err := transformObject(obj)
			require.NoError(t, err)
			twice, err := transformObject(once)
			require.NoError(t, err)
			assert.Equal(t, once, twice)
		})
	}
}

func TestTransformTombstones(t *testing.T) {
	pod, node := fullPod(), fullNode(30)
	wantPod, wantNode := leanPod(pod), leanNode(node)
	beforePod, beforeNode := pod.DeepCopy(), node.DeepCopy()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", ManagedFields: managedFs}}
	beforeSecret := secret.DeepCopy()
	wantSecret := secret.DeepCopy()
	wantSecret.ManagedFields = nil

	tests := []struct {
		name string
		in   any
		want any
	}{
		{"pod", pod, wantPod},
		{"node", node, wantNode},
		{"secret", secret, wantSecret},
		{"lean pod", wantPod, wantPod},
		{"nil object", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := transformObject(cache.DeletedFinalStateUnknown{Key: "ns/name", Obj: tc.in})
			require.NoError(t, err)
			tomb, ok := out.(cache.DeletedFinalStateUnknown)
			require.True(t, ok, "a tombstone stays a tombstone: %T", out)
			assert.Equal(t, "ns/name", tomb.Key)
			assert.Equal(t, tc.want, tomb.Obj)
		})
	}
	// A tombstone's object may be the one in the store: it is never modified.
	assert.Equal(t, beforePod, pod)
	assert.Equal(t, beforeNode, node)
	assert.Equal(t, beforeSecret, secret)
}

func TestTransformNilAndForeign(t *testing.T) {
	out, err := transformObject((*corev1.Pod)(nil))
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Pod))
	out, err = transformObject((*corev1.Node)(nil))
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Node))
	out, err = transformObject("not an object")
	require.NoError(t, err)
	assert.Equal(t, "not an object", out)
}

func TestIsKruiseKey(t *testing.T) {
	for key, want := range map[string]bool{
		"apps.kruise.io/sidecar-terminated-at": true,
		"kruise.io/x":                          true,
		"a.b.kruise.io/x":                      true,
		"notkruise.io/x":                       false,
		"kruise.io.evil.com/x":                 false,
		"kruise.io":                            false,
		"prometheus.io/scrape":                 false,
	} {
		assert.Equal(t, want, isKruiseKey(key), key)
	}
}

// TestTransformSizes logs how much smaller the cached objects get (JSON
// size, a proxy for memory); it asserts only that they shrink.
func TestTransformSizes(t *testing.T) {
	size := func(obj any) int {
		b, err := json.Marshal(obj)
		require.NoError(t, err)
		return len(b)
	}
	for _, tc := range []struct {
		name string
		obj  func() metav1.Object
	}{
		{"Node with 300 images", func() metav1.Object { return fullNode(300) }},
		{"Job pod (2 containers, init container, volumes, 21 env vars each)", func() metav1.Object { return fullPod() }},
	} {
		obj := tc.obj()
		before := size(obj)
		// What the caches held before this transform: all but managedFields.
		obj.SetManagedFields(nil)
		noManaged := size(obj)
		out, err := transformObject(tc.obj())
		require.NoError(t, err)
		after := size(out)
		t.Logf("%s: %d bytes as served, %d without managedFields, %d lean (%.1f%% of the former cache entry)",
			tc.name, before, noManaged, after, 100*float64(after)/float64(noManaged))
		assert.Less(t, after, noManaged)
	}
}

// ---- the controllers, on caches filled through the transform ----

// transformed holds fake clients and informer factories that transform as
// run's do.
type transformed struct {
	kube   *fake.Clientset
	kruise *kruisefake.Clientset
	deps   Deps
}

func newTransformed(kubeObjs, kruiseObjs []runtime.Object) *transformed {
	kube := fake.NewClientset(kubeObjs...)
	kruise := kruisefake.NewSimpleClientset(kruiseObjs...)
	o := NewOptions()
	return &transformed{kube: kube, kruise: kruise, deps: Deps{
		Client: kube, InformerFactory: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(transformObject)),
		KruiseClient: kruise, KruiseInformerFactory: kruiseinformers.NewSharedInformerFactoryWithOptions(kruise, 0, kruiseinformers.WithTransform(transformObject)),
		SecretInformerFactory: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(transformObject)),
		DaemonConfigInformerFactory: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(appsv1beta1.DaemonConfigNamespace), informers.WithTransform(transformObject)),
		Options: o,
	}}
}

// run builds the controller, starts the informers and runs it until the test
// ends.
func (x *transformed) run(t *testing.T, build Builder) {
	t.Helper()
	c, err := build(x.deps)
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	factories := []informerFactory{x.deps.InformerFactory, x.deps.KruiseInformerFactory, x.deps.SecretInformerFactory, x.deps.DaemonConfigInformerFactory}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			require.True(t, ok, "cache of %v synced", typ)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		for _, f := range factories {
			f.Shutdown()
		}
	})
}

// podPatches returns the bodies of the pod patches sent, by subresource.
func (x *transformed) podPatches() map[string][]string {
	out := map[string][]string{}
	for _, a := range x.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			out[a.GetSubresource()] = append(out[a.GetSubresource()], string(p.GetPatch()))
		}
	}
	return out
}

// jobPod is fullPod with its main container done and its sidecar running,
// on a node that is virtual or not.
func jobPod() *corev1.Pod {
	p := fullPod()
	p.Annotations = nil
	p.Status.Conditions = p.Status.Conditions[:2]
	return p
}

func realNode() *corev1.Node {
	n := fullNode(300)
	delete(n.Labels, "type")
	return n
}

func TestSidecarTerminatorOnTransformedCache(t *testing.T) {
	x := newTransformed([]runtime.Object{jobPod(), realNode()}, nil)
	x.run(t, buildSidecarTerminator)

	require.Eventually(t, func() bool { return len(x.podPatches()["status"]) > 0 && len(x.podPatches()[""]) > 0 },
		10*time.Second, 10*time.Millisecond, "the phase is recorded and the pod nudged")
	patches := x.podPatches()
	assert.Contains(t, patches["status"][0], `"phase":"Succeeded"`)
	assert.Contains(t, patches["status"][0], `main exited 0`)
	assert.Contains(t, patches["status"][0], `stopping sidecars proxy`)
	assert.Contains(t, patches[""][0], sidecarterminator.AnnotationTerminatedAt)

	// The cache holds the lean pod and node.
	pod, err := x.deps.InformerFactory.Core().V1().Pods().Lister().Pods("jobs").Get("batch-42-xk2p9")
	require.NoError(t, err)
	assert.Nil(t, pod.Spec.Volumes)
	node, err := x.deps.InformerFactory.Core().V1().Nodes().Lister().Get("node-a")
	require.NoError(t, err)
	assert.Nil(t, node.Status.Images)
}

func TestSidecarTerminatorVirtualKubeletOnTransformedCache(t *testing.T) {
	pod := jobPod()
	pod.Spec.Containers[1].Env[3] = corev1.EnvVar{Name: sidecarterminator.EnvTerminateSidecarWithImage, Value: "registry.example.com/exit:1"}
	x := newTransformed([]runtime.Object{pod, fullNode(300)}, nil)
	x.run(t, buildSidecarTerminator)

	require.Eventually(t, func() bool { return len(x.podPatches()[""]) > 0 }, 10*time.Second, 10*time.Millisecond,
		"the sidecar image is replaced on a virtual-kubelet node (label type read from the cache)")
	patches := x.podPatches()
	assert.Contains(t, patches[""][0], `{"image":"registry.example.com/exit:1","name":"proxy"}`)
	assert.Empty(t, patches["status"], "no phase on a virtual-kubelet node")
}

func TestNodeImageOnTransformedCache(t *testing.T) {
	node := realNode()
	x := newTransformed([]runtime.Object{node}, nil)
	x.run(t, buildNodeImage)

	var ni *appsv1beta1.NodeImage
	require.Eventually(t, func() bool {
		var err error
		ni, err = x.kruise.AppsV1beta1().NodeImages().Get(context.Background(), "node-a", metav1.GetOptions{})
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "a Ready node gets its NodeImage")
	assert.Equal(t, node.Labels, ni.Labels, "every node label is copied")
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: node.UID}}, ni.OwnerReferences)
}

func TestImagePullJobPodSelectorOnTransformedCache(t *testing.T) {
	job := gen.ImagePullJob("warm", gen.SetImagePullJobNamespace("jobs"), gen.SetImagePullJobUID("job-uid"), gen.SetImagePullJobGeneration(1),
		gen.SetImagePullJobCreationTimestamp(tHourAgo.Time), gen.SetImagePullJobImage("registry.example.com/team/next:2.0"),
		gen.SetImagePullJobPodSelector(map[string]string{"app": "batch"}))
	elsewhere := fullPod()
	elsewhere.Name, elsewhere.UID, elsewhere.Spec.NodeName = "other", "pod-uid-2", "node-b"
	elsewhere.Labels = map[string]string{"app": "web"}
	done := fullPod()
	done.Name, done.UID, done.Spec.NodeName, done.Status.Phase = "done", "pod-uid-3", "node-c", corev1.PodSucceeded
	nis := []runtime.Object{job}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nis = append(nis, gen.NodeImage(n, gen.SetNodeImageResourceVersion("1")))
	}
	x := newTransformed([]runtime.Object{fullPod(), elsewhere, done}, nis)
	x.run(t, buildImagePullJob)

	images := func(node string) int {
		ni, err := x.kruise.AppsV1beta1().NodeImages().Get(context.Background(), node, metav1.GetOptions{})
		require.NoError(t, err)
		return len(ni.Spec.Images)
	}
	require.Eventually(t, func() bool { return images("node-a") == 1 }, 10*time.Second, 10*time.Millisecond,
		"the node of the running pod the podSelector matches gets the image")
	assert.Zero(t, images("node-b"), "a pod the selector does not match")
	assert.Zero(t, images("node-c"), "a finished pod")
}

// The NodePodProbe controller reads the pod's IP, its Initialized condition and its containers'
// named ports from the lean cache.
func TestPodProbeMarkerOnTransformedCache(t *testing.T) {
	ppm := &appsv1alpha1.PodProbeMarker{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "jobs", Generation: 1},
		Spec: appsv1alpha1.PodProbeMarkerSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}},
			Probes: []appsv1alpha1.PodContainerProbe{{Name: "tcp", ContainerName: "main", PodConditionType: "x.io/up",
				Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}}}}}},
	}
	x := newTransformed([]runtime.Object{fullPod(), realNode()}, []runtime.Object{ppm})
	x.run(t, buildPodProbeMarker)

	var npp *appsv1alpha1.NodePodProbe
	require.Eventually(t, func() bool {
		var err error
		npp, err = x.kruise.AppsV1alpha1().NodePodProbes().Get(context.Background(), "node-a", metav1.GetOptions{})
		return err == nil && len(npp.Spec.PodProbes) == 1
	}, 10*time.Second, 10*time.Millisecond, "the pod's probe is listed")
	pp := npp.Spec.PodProbes[0]
	assert.Equal(t, "10.1.2.3", pp.IP)
	require.Len(t, pp.Probes, 1)
	assert.Equal(t, intstr.FromInt32(8080), pp.Probes[0].Probe.TCPSocket.Port, "the named port resolved from the cached container")
}

// run itself fills the caches through the transform.
func TestRunCachesLeanObjects(t *testing.T) {
	client := fake.NewClientset(fullPod(), fullNode(300))
	var got atomic.Pointer[Deps]
	c := newFake("lean")
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, testOptions(), deps{
			client: client, leases: client.CoordinationV1(), identity: "test-replica_1234",
			builders: []Entry{{Name: "lean", Build: func(d Deps) (Controller, error) {
				d.InformerFactory.Core().V1().Pods().Informer()
				d.InformerFactory.Core().V1().Nodes().Informer()
				got.Store(&d)
				return c, nil
			}}},
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	require.Eventually(t, func() bool { return c.started.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	d := got.Load()
	pod, err := d.InformerFactory.Core().V1().Pods().Lister().Pods("jobs").Get("batch-42-xk2p9")
	require.NoError(t, err)
	assert.Equal(t, leanPod(fullPod()), pod)
	node, err := d.InformerFactory.Core().V1().Nodes().Lister().Get("node-a")
	require.NoError(t, err)
	assert.Equal(t, leanNode(fullNode(300)), node)
}

// The pod of fullPod was admitted with launch priority (proxy 1, main
// waits for key p_0); proxy is Ready, so both keys are due and the pod is
// completed: the barrier env vars, the priority and the container statuses
// are read from the lean cache.
func TestLaunchPriorityOnTransformedCache(t *testing.T) {
	pod := jobPod()
	x := newTransformed([]runtime.Object{pod}, nil)
	x.run(t, buildLaunchPriority)

	require.Eventually(t, func() bool { return len(x.podPatches()[""]) > 0 }, 10*time.Second, 10*time.Millisecond,
		"the pod is marked completed")
	assert.Contains(t, x.podPatches()[""][0], `"apps.kruise.io/container-launch-priority-completed":"true"`)
	cm, err := x.kube.CoreV1().ConfigMaps("jobs").Get(context.Background(), "batch-42-xk2p9-barrier", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"p_1": "true", "p_0": "true"}, cm.Data)
	assert.Equal(t, pod.UID, cm.OwnerReferences[0].UID)
}

func TestPodReadinessOnTransformedCache(t *testing.T) {
	pod := fullPod()
	pod.Status.Conditions = pod.Status.Conditions[:2] // no KruisePodReady yet
	x := newTransformed([]runtime.Object{pod}, nil)
	x.run(t, buildPodReadiness)

	require.Eventually(t, func() bool { return len(x.podPatches()["status"]) > 0 }, 10*time.Second, 10*time.Millisecond,
		"a pod declaring the gate (spec.readinessGates read from the cache) gets the condition")
	patch := x.podPatches()["status"][0]
	assert.Contains(t, patch, `"type":"KruisePodReady"`)
	assert.Contains(t, patch, `"resourceVersion":"123456"`, "the cached resourceVersion is the precondition")
}

// Every controller's reads of cached Pods and Nodes were checked against
// leanPod and leanNode. A new controller fails here until it is.
func TestTransformReviewedForEveryController(t *testing.T) {
	reviewed := map[string]bool{
		"containerrecreaterequest": true, "podreadiness": true, "sidecarterminator": true, "nodeimage": true,
		"pullsecrets": true, "imagepulljob": true, "imagelistpulljob": true, "launchpriority": true,
		"cloneset": true, "daemonset": true, "statefulset": true, "sidecarset": true,
		// sidecarset-scope reads SidecarSets and the webhook configuration only, no Pod or Node.
		"sidecarset-scope": true,
		// podunavailablebudget-scope reads a pod's namespace, name, generateName, labels and owner
		// references (all in podKept).
		"podunavailablebudget-scope": true,
		// workloadspread-scope reads WorkloadSpreads and the webhook configurations only, no Pod or Node.
		"workloadspread-scope": true,
		// workloadmetrics reads CloneSets, StatefulSets, DaemonSets and SidecarSets only, no Pod or Node.
		"workloadmetrics": true,
		// storage-version-migrator reads CRDs and lists object metadata from the API server, no cache.
		"storage-version-migrator": true,
		// podunavailablebudget reads labels, owner references, kruise's annotations, uid, creation
		// and deletion, status.phase and status.conditions (all kept), and, of pods an in-place
		// update touched (a kruise workload's, kept whole), the update state and container statuses.
		"podunavailablebudget": true,
		// workloadspread reads labels, owner references, kruise's annotations (matched-workloadspread)
		// and pod-deletion-cost, uid, creation and deletion, spec.nodeName, status.phase and
		// status.conditions (Ready, PodScheduled): all kept. Adoption reads the few pods it adopts
		// whole from the API server.
		"workloadspread": true,
		// broadcastjob reads its own pods (kept whole: an apps.kruise.io controller) and of nodes
		// the name, labels, taints, spec.unschedulable and status.allocatable (all in nodeKept).
		"broadcastjob": true,
		// advancedcronjob reads AdvancedCronJobs, Jobs, BroadcastJobs and ImageListPullJobs (kept
		// whole but managedFields), no Pod or Node.
		"advancedcronjob": true,
		// ephemeraljob reads labels, uid, creation and deletion, status.phase (kept), the ephemeral
		// containers' names and KRUISE_EJOB_ID and their statuses (TestTransformKeepsEphemeralContainers).
		"ephemeraljob": true,
		// podprobemarker reads labels, uid, deletion, spec.nodeName, status.phase, status.conditions,
		// kruise's annotations (container-probe-context, the marks), status.podIP and the containers'
		// named ports (podKept); of nodes the name, uid and labels (type=virtual-kubelet).
		"podprobemarker": true,
		// nodepodprobe reads labels, the marks record and the annotations it lists (kept:
		// TestTransformKeepsOnlyRecordedMarks), status.conditions, spec.nodeName, uid,
		// resourceVersion, deletion and status.phase of pods, and the labels of nodes (all kept).
		"nodepodprobe": true,
		// enhancedliveness reads of the pods whose liveness it carries out (a kruise workload's,
		// kept whole) kruise's annotations, owner references, uid, resourceVersion, deletion,
		// spec.nodeName, terminationGracePeriodSeconds, status.phase and the Ready condition (all
		// kept for any pod); no Node.
		"enhancedliveness": true,
		// uniteddeployment reads of its subsets' pods the labels (subset, revision, reserved),
		// owner references, creation and deletion, spec.nodeName, status.phase and
		// status.conditions (Ready, PodScheduled): all kept. No Node.
		"uniteddeployment": true,
		// resourcedistribution reads no Pod or Node; of namespaces the name, labels and deletion
		// (kept). Its copy caches are its own (managed fields dropped; copies are Updated from
		// them whole but for those).
		"resourcedistribution": true,
		// persistentpodstate reads of pods the name, namespace, owner references, uid, deletion,
		// spec.nodeName and the Ready condition (all kept for any pod), the other annotations it
		// records from the API server; of nodes the name and labels (kept).
		"persistentpodstate": true,
	}
	for _, e := range builders {
		assert.True(t, reviewed[e.Name], "controller %q is new: keep, in leanPod and leanNode (transform.go), every Pod and Node field it reads "+
			"from the cache, add them to podKept/nodeKept, then list it here", e.Name)
	}
}

// Of a pod's other annotations only those the marks record lists are kept: the nodepodprobe
// controller compares their values with its markers' and takes them off again.
func TestTransformKeepsOnlyRecordedMarks(t *testing.T) {
	full := fullPod()
	full.Annotations["game.io/other"] = "not recorded"
	lean := leanPod(full)
	assert.Equal(t, "idle", lean.Annotations["game.io/state"])
	assert.NotContains(t, lean.Annotations, "game.io/other")

	full.Annotations[nodeprobe.MarksAnnotation] = "{not json"
	lean = leanPod(full)
	assert.NotContains(t, lean.Annotations, "game.io/state", "a record that does not parse lists nothing")
	assert.Equal(t, "{not json", lean.Annotations[nodeprobe.MarksAnnotation], "but is kept, to be rewritten")
}

func TestTransformKeepsSidecarSetInjectedPodsWhole(t *testing.T) {
	full := fullPod()
	full.Annotations["kruise.io/sidecarset-hash"] = `{"log":{"hash":"h","sidecarSetName":"log"}}`
	before := full.DeepCopy()

	out, err := transformObject(full)
	require.NoError(t, err)
	want := before.DeepCopy()
	want.ManagedFields = nil
	assert.Equal(t, want, out, "the SidecarSet controller reads an injected pod's init containers, statuses and image IDs")
}

// The EphemeralJob controller reads the ephemeral containers' names and ownership mark, and
// their statuses; nothing else of them is kept.
func TestTransformKeepsEphemeralContainers(t *testing.T) {
	full := fullPod()
	full.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Command: []string{"sleep", "1"},
		Env: []corev1.EnvVar{{Name: "A", Value: "b"}, {Name: "KRUISE_EJOB_ID", Value: "uid-1"}},
	}, TargetContainerName: "main"}}
	full.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debugger", Image: "busybox", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "long", FinishedAt: tMinAgo}}}}
	out, err := transformObject(full)
	require.NoError(t, err)
	lean := out.(*corev1.Pod)
	assert.Equal(t, []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Env: []corev1.EnvVar{{Name: "KRUISE_EJOB_ID", Value: "uid-1"}}}}}, lean.Spec.EphemeralContainers)
	assert.Equal(t, []corev1.ContainerStatus{{Name: "debugger",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, FinishedAt: tMinAgo}}}}, lean.Status.EphemeralContainerStatuses)
}
