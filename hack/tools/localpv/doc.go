// Command localpv is the local cluster's dynamic provisioner (hack/cluster.sh runs it as a host
// process, like the registry and the CRI proxy): a claim of its StorageClass gets a
// PersistentVolume of type local, a directory <root>/<pv-name> on this machine, pinned to the one
// node by node affinity. It is built on the Kubernetes SIG Storage provisioner library
// (sigs.k8s.io/sig-storage-lib-external-provisioner), which watches the claims, calls Provision
// and Delete, and creates and deletes the PersistentVolume objects.
//
// At start it creates (or brings back) the default StorageClass: volumeBindingMode
// WaitForFirstConsumer, so the claim is provisioned once the scheduler has picked the pod's node;
// reclaimPolicy Delete, so the directory goes with the volume; allowVolumeExpansion true.
//
// Expansion. kube-controller-manager's expand controller grows only the volumes of in-tree
// plugins that can expand (it then marks the claim with volume.kubernetes.io/storage-resizer) and
// hands CSI-migrated ones to an external resizer by the same annotation. For any other volume — a
// local one from an external provisioner like this — it records an ExternalExpanding Event
// ("waiting for an external controller to expand this PVC") and does nothing more: no
// annotation, no requeue. So this command also runs a minimal resizer for its own volumes
// (pv.kubernetes.io/provisioned-by naming it): when a bound claim requests more than its
// status.capacity, the PersistentVolume's capacity is raised to the request, then the claim's
// status.capacity and allocatedResources are set to it and the resize conditions and statuses
// are cleared, which also tells the kubelet that no node expansion is pending. A directory has no
// quota, so a size here is bookkeeping: nothing on disk changes, and a volume may hold more than
// its capacity.
//
// The module is separate from kruise's because the library requires newer Kubernetes libraries
// than kruise builds with; hack/build-localpv.sh builds it. The process serves nothing: no
// metrics, health or profiling listener binds a port.
package main
