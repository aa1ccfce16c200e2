package pullsecrets

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzCopyName checks the name of the copy of a pull secret an
// ImagePullJob names. For a valid namespace (a DNS label) and a valid
// secret name (a DNS subdomain): the copy's name is a valid secret name
// itself, starts with "namespace.", and two different sources never share
// a copy name (a long name is replaced by a 128-bit hash of it; a short
// name crafted to equal the hash of a long one in the same namespace would
// collide, which the source annotations of the copy catch). For any input:
// no panic, deterministic.
func FuzzCopyName(f *testing.F) {
	long := strings.Repeat("a", 252)
	for _, s := range [][4]string{
		{"default", "regcred", "default", "regcred2"},
		{"team-a", "pull.secret", "team", "a.pull.secret"},
		{"ns", long, "ns", long + "b"},
		{"ns", long[:250], "ns", long[:251]},
		{strings.Repeat("n", 63), strings.Repeat("s", 253), strings.Repeat("n", 63), strings.Repeat("s", 252)},
		{"ns", "0123456789abcdef0123456789abcdef", "ns", long},
		{"", "", "a", "b"},
		{"a.b", "c", "a", "b.c"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, ns1, name1, ns2, name2 string) {
		c1, c2 := CopyName(ns1, name1), CopyName(ns2, name2)
		if c1 != CopyName(ns1, name1) {
			t.Fatalf("CopyName(%q, %q) is not deterministic", ns1, name1)
		}
		if !strings.HasPrefix(c1, ns1+".") {
			t.Fatalf("CopyName(%q, %q) = %q does not start with the namespace", ns1, name1, c1)
		}
		valid := func(ns, name string) bool {
			return len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
		}
		if !valid(ns1, name1) {
			return
		}
		if errs := validation.IsDNS1123Subdomain(c1); len(errs) != 0 {
			t.Fatalf("CopyName(%q, %q) = %q is not a valid secret name: %v", ns1, name1, c1, errs)
		}
		if valid(ns2, name2) && (ns1 != ns2 || name1 != name2) && c1 == c2 {
			t.Fatalf("%s/%s and %s/%s share the copy name %q", ns1, name1, ns2, name2, c1)
		}
	})
}
