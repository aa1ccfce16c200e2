// Package pullsecrets keeps, in the daemon-config namespace, a copy of every
// pull secret an unfinished ImagePullJob references (one neither completed
// nor being deleted), so that kruise-daemon can read them without access to
// secrets anywhere else. Only registry
// credentials (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg)
// are copied; a job naming any other secret is told so (Unusable).
package pullsecrets

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Annotations on a copy saying where it comes from.
const (
	SourceNamespaceAnnotation = "apps.kruise.io/source-secret-namespace"
	SourceNameAnnotation      = "apps.kruise.io/source-secret-name"
	// ManagedByLabel marks the copies this controller owns.
	ManagedByLabel = "apps.kruise.io/pull-secret-copy"

	// OpenKruise's annotations on its copies, written on ours too so that
	// its tooling and its users' scripts find them: the source as
	// "namespace/name", and the unfinished jobs referencing it as a
	// comma-separated list of "namespace/name" (see referencesValue).
	SourceKeyAnnotation  = "imagepulljobs.kruise.io/source-key"
	ReferencesAnnotation = "imagepulljobs.kruise.io/references"
)

// maxReferences bounds the references annotation (a Secret's annotations
// share 256 KiB with everything else): the jobs past it, in sorted order,
// are left out. It is a record for tools: which jobs keep a copy is decided
// from the jobs themselves. The ImagePullJob controller reads it back only to
// know when a finished job no longer holds a copy (ReferencedJobs).
const maxReferences = 32 << 10

// maxName is the longest Secret name (a DNS subdomain).
const maxName = 253

// CopyName is the name of the copy of secret namespace/name. A namespace
// has no dots, so "namespace.name" is unambiguous; a name too long for that
// is replaced by a hash of it.
func CopyName(namespace, name string) string {
	if n := namespace + "." + name; len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	return namespace + "." + hex.EncodeToString(sum[:16])
}

// CopyRef is the reference, as NodeImage specs carry it, to the copy of
// secret namespace/name in v1beta1.DaemonConfigNamespace (the controller's
// default Config.Namespace, the namespace kruise-daemon may read).
func CopyRef(namespace, name string) v1beta1.ReferenceObject {
	return v1beta1.ReferenceObject{Namespace: v1beta1.DaemonConfigNamespace, Name: CopyName(namespace, name)}
}
