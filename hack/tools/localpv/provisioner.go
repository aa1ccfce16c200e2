package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// hostnameLabel is the node label a volume's node affinity matches (the kubelet sets it to the
// node's name).
const hostnameLabel = "kubernetes.io/hostname"

// dirProvisioner makes and removes the directories; the library does everything with the API.
type dirProvisioner struct {
	root string
	node string
}

var _ controller.Provisioner = &dirProvisioner{}

// Provision creates the volume's directory and returns its PersistentVolume.
func (p *dirProvisioner) Provision(ctx context.Context, o controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	if o.SelectedNodeName != "" && o.SelectedNodeName != p.node {
		// A simulated node (kwok, a fake Node object) has no disk here: let the scheduler pick again.
		return nil, controller.ProvisioningReschedule, fmt.Errorf("node %s is not %s, the only node with local directories", o.SelectedNodeName, p.node)
	}
	pv, err := buildVolume(p.root, p.node, o)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	dir := pv.Spec.Local.Path
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("creating %s: %w", dir, err)
	}
	// Writable by any user: containers need not run as root to use their volume.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("opening up %s: %w", dir, err)
	}
	klog.FromContext(ctx).Info("Provisioned", "pv", pv.Name, "pvc", klog.KObj(o.PVC), "dir", dir)
	return pv, controller.ProvisioningFinished, nil
}

// Delete removes the volume's directory; the library then deletes the PersistentVolume.
func (p *dirProvisioner) Delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	dir, err := deletionDir(p.root, p.node, pv)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	klog.FromContext(ctx).Info("Deleted", "pv", pv.Name, "dir", dir)
	return nil
}

// volumeDir is where the volume named pvName lives: a child of root named after it. The name is
// refused when it could name anything else.
func volumeDir(root, pvName string) (string, error) {
	if pvName == "" || pvName == "." || pvName == ".." || filepath.Base(pvName) != pvName {
		return "", fmt.Errorf("%q cannot name a directory under %s", pvName, root)
	}
	return filepath.Join(root, pvName), nil
}

// buildVolume is the PersistentVolume for a claim: a local volume at volumeDir, sized as the
// claim requests, pinned to node, reclaimed as its class says (Delete when it says nothing).
// The library adds the claim reference, the class name and the provisioned-by annotation.
func buildVolume(root, node string, o controller.ProvisionOptions) (*corev1.PersistentVolume, error) {
	if o.PVC == nil {
		return nil, errors.New("no claim to provision for")
	}
	dir, err := volumeDir(root, o.PVName)
	if err != nil {
		return nil, err
	}
	size, ok := o.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil, fmt.Errorf("claim %s requests no storage", klog.KObj(o.PVC))
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if o.StorageClass != nil && o.StorageClass.ReclaimPolicy != nil {
		reclaim = *o.StorageClass.ReclaimPolicy
	}
	mode := corev1.PersistentVolumeFilesystem
	if o.PVC.Spec.VolumeMode != nil {
		mode = *o.PVC.Spec.VolumeMode
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: o.PVName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size.DeepCopy()},
			AccessModes:                   append([]corev1.PersistentVolumeAccessMode(nil), o.PVC.Spec.AccessModes...),
			PersistentVolumeReclaimPolicy: reclaim,
			VolumeMode:                    &mode,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}, nil
}

// deletionDir is the directory to remove for pv: only the one buildVolume gave it. A volume of
// another node is ignored (another provisioner's); one whose path is not its own directory under
// root is refused, so that an edited or forged PersistentVolume cannot name anything else.
func deletionDir(root, node string, pv *corev1.PersistentVolume) (string, error) {
	if n := volumeNode(pv); n != node {
		return "", &controller.IgnoredError{Reason: fmt.Sprintf("volume %s is on node %q, not %s", pv.Name, n, node)}
	}
	want, err := volumeDir(root, pv.Name)
	if err != nil {
		return "", err
	}
	if pv.Spec.Local == nil || filepath.Clean(pv.Spec.Local.Path) != want {
		return "", fmt.Errorf("volume %s is not the local directory %s: not removing anything", pv.Name, want)
	}
	return want, nil
}

// volumeNode is the node buildVolume pinned pv to, or "".
func volumeNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == hostnameLabel && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}
