package imagepulljob

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekruise/kruise/test/unit/gen"
)

// The string forms the CRD's CEL rule admits: what strconv.ParseInt reads
// as a number from 0 to MaxInt32 (OpenKruise's webhook parses it so).
var (
	schemaParallelism     = regexp.MustCompile(`^[+]?0*[0-9]{1,10}$`)
	schemaParallelismZero = regexp.MustCompile(`^-0+$`)
)

func schemaAdmits(s string) bool {
	if schemaParallelismZero.MatchString(s) {
		return true
	}
	if !schemaParallelism.MatchString(s) {
		return false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return err == nil && v <= math.MaxInt32
}

// FuzzParallelismOf checks how spec.parallelism (an IntOrString, percent
// included although the schema forbids it) becomes a number of nodes.
// Invariants: no panic; deterministic; never negative; an integer gives
// itself (a negative one 0); a schema-valid string gives its number, with
// or without spaces around it; a percentage of at most 100% gives that
// share of desired rounded up; anything else that does not parse gives 1.
func FuzzParallelismOf(f *testing.F) {
	f.Add(true, int32(1), "", int32(10))
	f.Add(true, int32(0), "", int32(10))
	f.Add(true, int32(-3), "", int32(10))
	f.Add(true, int32(math.MaxInt32), "", int32(10))
	f.Add(false, int32(0), "5", int32(10))
	f.Add(false, int32(0), " 7 ", int32(10))
	f.Add(false, int32(0), "0", int32(10))
	f.Add(false, int32(0), "999999999", int32(10))
	f.Add(false, int32(0), "9999999999", int32(10))
	f.Add(false, int32(0), "2147483647", int32(10))
	f.Add(false, int32(0), "2147483648", int32(10))
	f.Add(false, int32(0), "+5", int32(10))
	f.Add(false, int32(0), "0007", int32(10))
	f.Add(false, int32(0), "-0", int32(10))
	f.Add(false, int32(0), "50%", int32(3))
	f.Add(false, int32(0), "100%", int32(7))
	f.Add(false, int32(0), "0%", int32(7))
	f.Add(false, int32(0), "150%", int32(7))
	f.Add(false, int32(0), "-5%", int32(7))
	f.Add(false, int32(0), "9999999999%", int32(math.MaxInt32))
	f.Add(false, int32(0), "99999999999999999999%", int32(7))
	f.Add(false, int32(0), "%", int32(7))
	f.Add(false, int32(0), "abc", int32(7))
	f.Add(false, int32(0), "-1", int32(7))
	f.Add(false, int32(0), "", int32(0))
	f.Add(false, int32(0), "1.5", int32(-1))
	f.Fuzz(func(t *testing.T, isInt bool, intVal int32, strVal string, desired int32) {
		p := intstr.FromString(strVal)
		if isInt {
			p = intstr.FromInt32(intVal)
		}
		job := gen.ImagePullJob("", gen.SetImagePullJobParallelism(p))
		got := parallelismOf(job, desired)
		if got != parallelismOf(job, desired) {
			t.Fatalf("parallelismOf(%v, %d) is not deterministic", p, desired)
		}
		if got < 0 {
			t.Fatalf("parallelismOf(%v, %d) = %d < 0", p, desired, got)
		}
		if isInt {
			if want := max(intVal, 0); got != want {
				t.Fatalf("parallelismOf(%d) = %d, want %d", intVal, got, want)
			}
			return
		}
		s := strings.TrimSpace(strVal)
		if schemaAdmits(s) {
			want, _ := strconv.ParseInt(s, 10, 32)
			if int64(got) != want {
				t.Fatalf("parallelismOf(%q) = %d, want %d", strVal, got, want)
			}
			return
		}
		if pct, ok := strings.CutSuffix(strVal, "%"); ok && desired >= 0 {
			if n, err := strconv.Atoi(pct); err == nil && n >= 0 && n <= 100 {
				want := int32(math.Ceil(float64(n) * float64(desired) / 100))
				if got != want {
					t.Fatalf("parallelismOf(%q, %d) = %d, want %d", strVal, desired, got, want)
				}
				if got > desired {
					t.Fatalf("parallelismOf(%q, %d) = %d, more than desired", strVal, desired, got)
				}
			}
			return
		}
		if strings.HasSuffix(s, "%") {
			return
		}
		if _, err := strconv.ParseInt(s, 10, 32); err != nil && got != 1 {
			t.Fatalf("invalid parallelism %q gives %d, want 1", strVal, got)
		}
	})
}
