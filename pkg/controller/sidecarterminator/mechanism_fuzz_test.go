package sidecarterminator

import (
	"strings"
	"testing"
)

// FuzzParseMechanism checks --sidecar-termination: exactly "phase" and
// "crr" are accepted, as themselves; anything else (other case, spaces
// included) is an error that quotes the value and names both choices.
func FuzzParseMechanism(f *testing.F) {
	for _, s := range []string{"phase", "crr", "", "Phase", "CRR", " crr", "crr\n", "kill", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMechanism(s)
		switch {
		case s == string(MechanismPhase) || s == string(MechanismCRR):
			if err != nil || string(m) != s {
				t.Fatalf("ParseMechanism(%q) = %q, %v", s, m, err)
			}
		case err == nil || m != "":
			t.Fatalf("ParseMechanism(%q) = %q, %v; want an error", s, m, err)
		case !strings.Contains(err.Error(), `"phase"`) || !strings.Contains(err.Error(), `"crr"`):
			t.Fatalf("ParseMechanism(%q): error %q does not name the choices", s, err)
		}
	})
}
