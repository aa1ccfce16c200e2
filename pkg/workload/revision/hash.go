package revision

import (
	"hash/fnv"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

const (
	// HashLabel holds a revision's hash on the revision itself, as the
	// built-in controllers set it.
	HashLabel = "controller.kubernetes.io/hash"
	// PodRevisionLabel holds, on a pod, the name of the revision it was
	// made from ("<workload>-<hash>"; OpenKruise's CloneSetShortHash gate
	// writes the hash alone).
	PodRevisionLabel = appsv1.ControllerRevisionHashLabelKey
	// maxNamePrefix keeps "<prefix>-<hash>" within the 253 characters of
	// an object name.
	maxNamePrefix = 223
)

// Hash returns the hash of a revision's data and, when not nil, the
// workload's collision count, encoded to be safe in a label value and a
// name. It is the built-in controllers' hash: 32-bit FNV-1 (Go's fnv.New32)
// of the data followed by the count in decimal, so a revision hashes alike
// here, in kube-controller-manager and in OpenKruise.
func Hash(data []byte, collisionCount *int32) string {
	hasher := fnv.New32()
	_, _ = hasher.Write(data) // a hash.Hash never fails to write
	if collisionCount != nil {
		_, _ = hasher.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(hasher.Sum32()), 10))
}

// Name returns the name of the workload's revision with the given hash.
func Name(workload, hash string) string {
	if len(workload) > maxNamePrefix {
		workload = workload[:maxNamePrefix]
	}
	return workload + "-" + hash
}

// ShortHash returns the hash part of a revision name (what pods of a
// CloneSet with the CloneSetShortHash gate carry), or the name itself when
// it has no "-".
func ShortHash(name string) string {
	return name[strings.LastIndex(name, "-")+1:]
}

// PodAt is whether obj (a pod) is at the revision named name: its controller-revision-hash label
// holds the name, or only the name's hash (what OpenKruise's CloneSetShortHash gate writes, and
// kruise's under the same gate), so pods written either way are read alike.
func PodAt(obj metav1.Object, name string) bool {
	v := obj.GetLabels()[PodRevisionLabel]
	return v != "" && (v == name || v == ShortHash(name))
}
