package features

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

// FuzzParsePairs checks the splitting of a --feature-gates value.
// Invariants: no panic; deterministic; an error comes with no pairs; the
// accepted pairs, one per non-blank item, have trimmed names without "," or
// "=", and printing them back as "Name=bool,..." parses to the same pairs.
func FuzzParsePairs(f *testing.F) {
	for _, s := range []string{
		"", " , ,", "KruiseDaemon=false", " SidecarTerminator = FALSE , ImagePullJobGate=True ",
		"PodWebhook=false,DaemonWatchingPod=true", "AllBeta=false,SidecarTerminator=true",
		"KruiseDeamon=false", "KruiseDaemon=yes", "PodWebhook=1", "KruiseDaemon", "KruiseDaemon=", "=true",
		"a=b=c", "A=true,,B=false", "A=true\n,B=false\t", "\u00a0A=true", "A=tRuE", "A==true",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		pairs, err := parsePairs(value)
		pairs2, err2 := parsePairs(value)
		if !reflect.DeepEqual(pairs, pairs2) || (err == nil) != (err2 == nil) {
			t.Fatalf("parsePairs(%q) is not deterministic", value)
		}
		if err != nil {
			if pairs != nil {
				t.Fatalf("parsePairs(%q) = %v with error %v", value, pairs, err)
			}
			return
		}
		items := 0
		for _, item := range strings.Split(value, ",") {
			if strings.TrimSpace(item) != "" {
				items++
			}
		}
		if len(pairs) != items {
			t.Fatalf("parsePairs(%q) = %d pairs for %d items", value, len(pairs), items)
		}
		var out []string
		for _, p := range pairs {
			if p.name == "" || p.name != strings.TrimSpace(p.name) || strings.ContainsAny(p.name, ",=") {
				t.Fatalf("parsePairs(%q): bad name %q", value, p.name)
			}
			v := "false"
			if p.value {
				v = "true"
			}
			out = append(out, p.name+"="+v)
		}
		again, err := parsePairs(strings.Join(out, ","))
		if err != nil || !reflect.DeepEqual(again, pairs) {
			t.Fatalf("parsePairs(%q) = %v, printed back %q parses to %v, %v", value, pairs, strings.Join(out, ","), again, err)
		}
	})
}

// flagState is what a Flag shows.
type flagState struct {
	str      string
	gates    map[string]bool
	warnings []Warning
}

func stateOf(f *Flag) flagState {
	return flagState{str: f.String(), gates: Effective(f.Gate()), warnings: f.Warnings()}
}

// FuzzFlagSet sets --feature-gates twice on a fresh gate, as a repeated
// flag does. Invariants: no panic; a value that is refused changes nothing
// (gates, String, warnings); the result is deterministic; and String, given
// once to a fresh flag, gives the same gates, String and warnings (a later
// value for a gate wins, AllAlpha and AllBeta included).
func FuzzFlagSet(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""},
		{"KruiseDaemon=false", ""},
		{"KruiseDaemon=false,TemplateNoDefaults=true", "KruiseDaemon=true"},
		{"AllBeta=false", "AllBeta=true"},
		{"AllBeta=false,SidecarTerminator=true", "SidecarTerminator=false"},
		{"AllBeta=true", "AllBeta=false"},
		{"KruiseDaemon=false", "AllBeta=true"},
		{"AllAlpha=true,AllBeta=false", "ImagePullJobGate=true"},
		{"PodWebhook=false,DaemonWatchingPod=true", "PodWebhook=true"},
		{"KruiseDaemon=false,Nope=true", "KruiseDaemon=false"},
		{"KruiseDaemon=yes", "SidecarTerminator=false"},
		{"KruiseDaemon=true,KruiseDaemon=false", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		fl := NewFlag(New())
		for _, v := range []string{first, second} {
			before := stateOf(fl)
			if err := fl.Set(v); err != nil {
				if after := stateOf(fl); !reflect.DeepEqual(before, after) {
					t.Fatalf("refused Set(%q) changed %+v to %+v", v, before, after)
				}
			}
		}
		got := stateOf(fl)

		again := NewFlag(New())
		_ = again.Set(first)
		_ = again.Set(second)
		if !reflect.DeepEqual(stateOf(again), got) {
			t.Fatalf("Set(%q), Set(%q) is not deterministic: %+v, then %+v", first, second, got, stateOf(again))
		}

		once := NewFlag(New())
		if err := once.Set(got.str); err != nil {
			t.Fatalf("String() = %q does not Set: %v", got.str, err)
		}
		if o := stateOf(once); !reflect.DeepEqual(o, got) {
			t.Fatalf("Set(%q), Set(%q) gives %+v; its String given once gives %+v", first, second, got, o)
		}
		if len(got.gates) != len(specs) || !maps.EqualFunc(got.gates, Effective(fl.Gate()), func(a, b bool) bool { return a == b }) {
			t.Fatalf("Effective lists %v", got.gates)
		}
	})
}
