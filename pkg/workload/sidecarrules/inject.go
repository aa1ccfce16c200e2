package sidecarrules

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Inject returns a copy of pod, being created in namespace, with what sets put into it: their
// init containers and containers, the volumes those mount, their imagePullSecrets and pod
// annotations, and the annotations recording what was injected at which version. sets are the
// SidecarSets that select the pod (ForPod), each at the version to inject (RevisionToInject), whose
// status.latestRevision names that version's ControllerRevision. Inject reads nothing else: now
// stamps the updateTimestamp of the hash annotations. A conflict between two SidecarSets (a
// container name, a volume name with different content, an Overwrite annotation) is a *Refusal
// naming both; pod itself is never changed.
func Inject(pod *corev1.Pod, namespace string, sets []*appsv1beta1.SidecarSet, now metav1.Time, opts InjectOptions) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	if len(sets) == 0 {
		return out, nil
	}
	sorted := slices.Clone(sets)
	slices.SortStableFunc(sorted, func(a, b *appsv1beta1.SidecarSet) int { return cmp.Compare(a.Name, b.Name) })

	in := &injection{
		pod:      pod,
		podRef:   podRef(pod, namespace),
		owners:   map[string]string{},
		volumes:  map[string]ownedVolume{},
		appMount: sharedMounts(pod),
		injected: namesInjected(sorted),

		working:        map[string]string{},
		hotAnnotations: map[string]string{},
	}
	for _, ss := range sorted {
		if err := in.add(ss); err != nil {
			return nil, err
		}
	}
	if err := patchMetadata(out, in.podRef, sorted); err != nil {
		return nil, err
	}

	slices.SortStableFunc(in.initContainers, func(a, b injected) int { return cmp.Compare(a.Name, b.Name) })
	out.Spec.InitContainers = mergeContainers(out.Spec.InitContainers, in.initContainers, appsv1beta1.AfterAppContainerType)
	if opts.SortContainersByName {
		slices.SortStableFunc(in.containers, func(a, b injected) int { return cmp.Compare(a.Name, b.Name) })
	}
	out.Spec.Containers = mergeContainers(out.Spec.Containers, in.containers, appsv1beta1.BeforeAppContainerType)
	out.Spec.Volumes = mergeVolumes(out.Spec.Volumes, in.volumeOrder, in.volumes)
	out.Spec.ImagePullSecrets = mergeSecrets(out.Spec.ImagePullSecrets, in.secrets)
	if err := recordInjection(out, in.podRef, sorted, in.sidecarLists, now); err != nil {
		return nil, err
	}
	if err := in.recordHotUpgrade(out); err != nil {
		return nil, err
	}
	return out, nil
}

// InjectOptions are the injection's switches.
type InjectOptions struct {
	// SortContainersByName (gate EnableSortSidecarContainerByName) orders the injected containers
	// by name, across the SidecarSets, before they go before or after the pod's own by their
	// podInjectPolicy. Off, they keep the order of the SidecarSets (by name) and of each
	// SidecarSet's containers. Init containers are sorted by name either way, as OpenKruise does.
	SortContainersByName bool
}

// recordHotUpgrade writes the annotations of the HotUpgrade sidecars injected: each copy's
// versions, and which copy works, kept for the sidecars of other SidecarSets. An unreadable
// working annotation is replaced, as OpenKruise does: it is only ever written by injection and
// upgrade.
func (in *injection) recordHotUpgrade(pod *corev1.Pod) error {
	if len(in.working) == 0 {
		return nil
	}
	working, err := WorkingCopies(in.pod)
	if err != nil {
		working = map[string]string{}
	}
	for name, c := range in.working {
		working[name] = c
	}
	raw, err := EncodeWorkingCopies(working)
	if err != nil {
		return err
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range in.hotAnnotations {
		pod.Annotations[k] = v
	}
	pod.Annotations[WorkingHotUpgradeAnnotation] = raw
	return nil
}

// injection gathers what the SidecarSets put into one pod before anything is merged, so that
// conflicts between them are found whatever their order.
type injection struct {
	pod    *corev1.Pod
	podRef string
	// owners maps an injected container name to the SidecarSet injecting it.
	owners         map[string]string
	initContainers []injected
	containers     []injected
	volumes        map[string]ownedVolume
	volumeOrder    []string
	secrets        []corev1.LocalObjectReference
	// sidecarLists maps a SidecarSet's name to the containers it recorded in its UpgradeSpec.
	sidecarLists map[string][]string
	appMount     []appMount
	// injected names every container and init container the SidecarSets inject: a
	// resourcesPolicy never reads them.
	injected map[string]bool
	// working maps each HotUpgrade sidecar injected to its working copy; hotAnnotations are the
	// copies' version annotations.
	working        map[string]string
	hotAnnotations map[string]string
}

type injected struct {
	corev1.Container
	policy appsv1beta1.PodInjectPolicyType
}

type ownedVolume struct {
	volume corev1.Volume
	owner  string
}

func (in *injection) add(ss *appsv1beta1.SidecarSet) error {
	ssVolumes := map[string]corev1.Volume{}
	for _, v := range ss.Spec.Volumes {
		ssVolumes[v.Name] = v
	}
	var list []string
	for i := range ss.Spec.InitContainers {
		sc := &ss.Spec.InitContainers[i]
		c, err := in.build(ss, sc, ssVolumes)
		if err != nil {
			return err
		}
		in.initContainers = append(in.initContainers, injected{Container: c, policy: sc.PodInjectPolicy})
		if IsNative(sc.Container) {
			list = append(list, sc.Name)
		}
	}
	for i := range ss.Spec.Containers {
		sc := &ss.Spec.Containers[i]
		c, err := in.build(ss, sc, ssVolumes)
		if err != nil {
			return err
		}
		list = append(list, sc.Name)
		if !IsHotUpgrade(sc) {
			in.containers = append(in.containers, injected{Container: c, policy: sc.PodInjectPolicy})
			continue
		}
		copies, annotations := hotUpgradeCopies(sc, c)
		for _, cp := range copies {
			in.containers = append(in.containers, injected{Container: cp, policy: sc.PodInjectPolicy})
		}
		in.working[sc.Name] = copies[0].Name
		for k, v := range annotations {
			in.hotAnnotations[k] = v
		}
	}
	in.secrets = append(in.secrets, ss.Spec.ImagePullSecrets...)
	if in.sidecarLists == nil {
		in.sidecarLists = map[string][]string{}
	}
	slices.Sort(list)
	in.sidecarLists[ss.Name] = slices.Compact(list)
	return nil
}

// build is the container sc of ss as it goes into the pod: the app containers' mounts shared when
// asked, the transferred env and IS_INJECTED added, the resources its resourcesPolicy computes,
// and the SidecarSet volumes it uses claimed.
func (in *injection) build(ss *appsv1beta1.SidecarSet, sc *appsv1beta1.SidecarContainer, ssVolumes map[string]corev1.Volume) (corev1.Container, error) {
	if other, ok := in.owners[sc.Name]; ok && other != ss.Name {
		return corev1.Container{}, refuse(ReasonContainerConflict,
			"pod %s: SidecarSets %s and %s both inject a container named %q", in.podRef, other, ss.Name, sc.Name)
	}
	in.owners[sc.Name] = ss.Name
	for _, name := range usedVolumes(sc.Container) {
		v, ok := ssVolumes[name]
		if !ok {
			// A volume of the pod's own, mounted by name: nothing to inject.
			continue
		}
		if err := in.claimVolume(ss.Name, v); err != nil {
			return corev1.Container{}, err
		}
	}

	c := *sc.Container.DeepCopy()
	var extraEnv []corev1.EnvVar
	if sc.ShareVolumePolicy.Type == appsv1beta1.ShareVolumePolicyEnabled {
		var mounts []corev1.VolumeMount
		for _, m := range in.appMount {
			mounts = append(mounts, m.mount)
			extraEnv = append(extraEnv, m.env...)
		}
		c.VolumeMounts = mergeMounts(c, mounts)
	}
	if sc.ShareVolumeDevicePolicy != nil && sc.ShareVolumeDevicePolicy.Type == appsv1beta1.ShareVolumePolicyEnabled {
		c.VolumeDevices = mergeDevices(c, appDevices(in.pod))
	}
	c.Env = mergeEnv(c.Env, []corev1.EnvVar{{Name: InjectedEnv, Value: "true"}})
	c.Env = mergeEnv(c.Env, transferredEnv(sc, in.pod))
	c.Env = mergeEnv(c.Env, extraEnv)
	if sc.ResourcesPolicy != nil {
		limits, requests, err := PolicyResources(in.pod, sc.ResourcesPolicy, in.injected)
		if err != nil {
			return corev1.Container{}, refuse(ReasonResourcesPolicy,
				"pod %s: SidecarSet %s, container %s: resourcesPolicy: %v", in.podRef, ss.Name, sc.Name, err)
		}
		c.Resources.Limits, c.Resources.Requests = limits, requests
	}
	return c, nil
}

// namesInjected are the names of the containers sets put into a pod, a HotUpgrade container
// under its own name too (a pod container of that name is replaced by the sidecar).
func namesInjected(sets []*appsv1beta1.SidecarSet) map[string]bool {
	names := map[string]bool{}
	for _, ss := range sets {
		for _, n := range injectedNames(ss) {
			names[n] = true
		}
		for _, c := range ss.Spec.Containers {
			names[c.Name] = true
		}
	}
	return names
}

func (in *injection) claimVolume(owner string, v corev1.Volume) error {
	if prev, ok := in.volumes[v.Name]; ok {
		if !apiequality.Semantic.DeepEqual(prev.volume, v) {
			return refuse(ReasonVolumeConflict,
				"pod %s: SidecarSets %s and %s both inject a volume named %q with different content", in.podRef, prev.owner, owner, v.Name)
		}
		return nil
	}
	in.volumes[v.Name] = ownedVolume{volume: v, owner: owner}
	in.volumeOrder = append(in.volumeOrder, v.Name)
	return nil
}

// mergeContainers puts injected into existing: one of an existing name replaces it where it is,
// the others go before or after the existing ones by their podInjectPolicy (empty: def), in order.
func mergeContainers(existing []corev1.Container, add []injected, def appsv1beta1.PodInjectPolicyType) []corev1.Container {
	if len(add) == 0 {
		return existing
	}
	at := map[string]int{}
	for i, c := range existing {
		at[c.Name] = i
	}
	var before, after []corev1.Container
	for _, c := range add {
		if i, ok := at[c.Name]; ok {
			existing[i] = c.Container
			continue
		}
		policy := c.policy
		if policy == "" {
			policy = def
		}
		if policy == appsv1beta1.BeforeAppContainerType {
			before = append(before, c.Container)
		} else {
			after = append(after, c.Container)
		}
	}
	out := make([]corev1.Container, 0, len(before)+len(existing)+len(after))
	out = append(out, before...)
	out = append(out, existing...)
	return append(out, after...)
}

// mergeVolumes adds the claimed volumes the pod has none of that name of: a pod's own volume of
// the same name wins, as OpenKruise does (the sidecar then mounts the pod's).
func mergeVolumes(existing []corev1.Volume, order []string, claimed map[string]ownedVolume) []corev1.Volume {
	has := map[string]bool{}
	for _, v := range existing {
		has[v.Name] = true
	}
	for _, name := range order {
		if !has[name] {
			existing = append(existing, claimed[name].volume)
			has[name] = true
		}
	}
	return existing
}

func mergeSecrets(existing, add []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	for _, s := range add {
		if !slices.Contains(existing, s) {
			existing = append(existing, s)
		}
	}
	return existing
}

// mergeEnv appends the variables of add whose names env does not have yet.
func mergeEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range add {
		if !slices.ContainsFunc(env, func(x corev1.EnvVar) bool { return x.Name == e.Name }) {
			env = append(env, e)
		}
	}
	return env
}

// usedVolumes names the volumes c mounts or attaches as devices.
func usedVolumes(c corev1.Container) []string {
	var names []string
	for _, m := range c.VolumeMounts {
		names = append(names, m.Name)
	}
	for _, d := range c.VolumeDevices {
		names = append(names, d.Name)
	}
	return names
}

// podRef names pod in messages: at CREATE a pod may have only a generateName.
func podRef(pod *corev1.Pod, namespace string) string {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	if namespace == "" {
		namespace = pod.Namespace
	}
	return namespace + "/" + name
}
