package validate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks of a container's ports, env and mounts as the API server's pod
// validation makes them, for containers kruise puts into pods it does not
// write itself (a SidecarSet's). Kept to what a pod would be refused for.

// checkPorts: a container port in 1-65535, a host port in 0-65535, a known
// protocol, and names that are IANA service names, unique in the container.
func checkPorts(path *field.Path, ports []corev1.ContainerPort) field.ErrorList {
	names := map[string]bool{}
	var errs field.ErrorList
	for i, p := range ports {
		ppath := path.Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(ppath.Child("name"), p.Name, msg))
			}
			if names[p.Name] {
				errs = append(errs, field.Duplicate(ppath.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
			errs = append(errs, field.Invalid(ppath.Child("containerPort"), p.ContainerPort, msg))
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(ppath.Child("hostPort"), p.HostPort, msg))
			}
		}
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(ppath.Child("protocol"), p.Protocol,
				[]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}))
		}
	}
	return errs
}

// checkEnv: every variable has a name (printable ASCII but '=', the API
// server's relaxed rule), and a value or a valueFrom of exactly one source.
func checkEnv(path *field.Path, env []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		epath := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(epath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(epath.Child("name"), e.Name, msg))
			}
		}
		from := e.ValueFrom
		if from == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, field.Invalid(epath.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
		n := 0
		for _, set := range []bool{from.FieldRef != nil, from.ResourceFieldRef != nil, from.ConfigMapKeyRef != nil,
			from.SecretKeyRef != nil, from.FileKeyRef != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(epath.Child("valueFrom"), "", "must have exactly one source"))
		}
	}
	return errs
}

// checkMounts: each volumeMount and volumeDevice names one of volumes and
// has a path, no path is used twice in the container, and a mount has at
// most one of subPath and subPathExpr.
func checkMounts(path *field.Path, c *corev1.Container, volumes map[string]bool) field.ErrorList {
	paths := map[string]bool{}
	var errs field.ErrorList
	checkOne := func(p *field.Path, name, at, atField string) {
		switch {
		case name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case !volumes[name]:
			errs = append(errs, field.NotFound(p.Child("name"), name))
		}
		switch {
		case at == "":
			errs = append(errs, field.Required(p.Child(atField), ""))
		case paths[at]:
			errs = append(errs, field.Invalid(p.Child(atField), at, "must be unique in the container"))
		}
		paths[at] = true
	}
	for i, m := range c.VolumeMounts {
		mpath := path.Child("volumeMounts").Index(i)
		checkOne(mpath, m.Name, m.MountPath, "mountPath")
		if m.SubPath != "" && m.SubPathExpr != "" {
			errs = append(errs, field.Invalid(mpath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
	}
	for i, d := range c.VolumeDevices {
		checkOne(path.Child("volumeDevices").Index(i), d.Name, d.DevicePath, "devicePath")
	}
	return errs
}
