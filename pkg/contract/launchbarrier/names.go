package launchbarrier

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// tokenAlphabet is the alphabet of the API server's generated name
// suffixes: no vowels (no words), no confusable characters.
const tokenAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// TokenLength is the length of the token that names the barrier ConfigMap
// of a pod created with generateName: 27^10 ≈ 2·10^14 values, so two live
// pods of one generateName practically never draw the same one (and the
// controller refuses, with an Event, a ConfigMap another pod controls).
const TokenLength = 10

// BarrierName names the barrier ConfigMap of the pod named pod:
// <pod>-barrier as in OpenKruise. The rare pod name too long for the suffix
// (a ConfigMap name has at most 253 characters) is cut and given a hash of
// the full name, so the result is still a valid name of its own.
func BarrierName(pod string) string {
	if len(pod)+len(BarrierSuffix) <= validation.DNS1123SubdomainMaxLength {
		return pod + BarrierSuffix
	}
	sum := sha256.Sum256([]byte(pod))
	hash := encode(sum[:], TokenLength)
	keep := validation.DNS1123SubdomainMaxLength - len(BarrierSuffix) - len(hash) - 1
	return trimName(pod[:keep]) + "-" + hash + BarrierSuffix
}

// GeneratedBarrierName names the barrier ConfigMap of a pod created with
// generateName, which has no name yet when it is admitted (the API server
// draws it after the mutating webhooks): <generateName><token>-barrier,
// the token drawn from seed (the admission request's UID, so a webhook
// called again for the same request names the same ConfigMap), or at
// random when seed is empty. The containers' barrier env vars carry the
// name, so the controller needs no rule to find it again.
func GeneratedBarrierName(generateName, seed string) string {
	var token string
	if seed == "" {
		token = randomToken()
	} else {
		sum := sha256.Sum256([]byte(seed))
		token = encode(sum[:], TokenLength)
	}
	base := generateName
	if room := validation.DNS1123SubdomainMaxLength - len(BarrierSuffix) - len(token); len(base) > room {
		// Cut one more for the dash that separates the cut from the token.
		base = trimName(base[:room-1])
		if base != "" {
			base += "-"
		}
	}
	return base + token + BarrierSuffix
}

// trimName drops the characters a name part may not end with before a
// suffix is appended.
func trimName(s string) string { return strings.TrimRight(s, "-.") }

// encode spells the first n values of b in tokenAlphabet.
func encode(b []byte, n int) string {
	out := make([]byte, n)
	for i := range out {
		out[i] = tokenAlphabet[int(b[i%len(b)])%len(tokenAlphabet)]
	}
	return string(out)
}

// randomToken is a token from the system's random source.
func randomToken() string {
	b := make([]byte, TokenLength)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return encode(b, TokenLength)
}
