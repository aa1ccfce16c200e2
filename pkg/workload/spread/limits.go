package spread

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// MaxReplicas is how many pods subset takes when the workload has total replicas: a count as
// written, or a percentage of total rounded up (as OpenKruise rounds it). unlimited is true when
// maxReplicas is unset. A malformed value (a string that is not a percentage, a negative count)
// is an error; admission refuses such a WorkloadSpread, so the controller only meets one written
// while kruise was down.
func MaxReplicas(subset *appsv1alpha1.WorkloadSpreadSubset, total int32) (max int32, unlimited bool, err error) {
	m := subset.MaxReplicas
	if m == nil {
		return 0, true, nil
	}
	if m.Type == intstr.Int {
		if m.IntVal < 0 {
			return 0, false, fmt.Errorf("subset %q: maxReplicas %d is negative", subset.Name, m.IntVal)
		}
		return m.IntVal, false, nil
	}
	pct, err := percent(m.StrVal)
	if err != nil {
		return 0, false, fmt.Errorf("subset %q: maxReplicas: %w", subset.Name, err)
	}
	if total < 0 {
		total = 0
	}
	v := math.Ceil(float64(pct) * float64(total) / 100)
	if v > math.MaxInt32 {
		v = math.MaxInt32
	}
	return int32(v), false, nil
}

// percent parses "NN%".
func percent(s string) (int64, error) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("%q is neither a count nor a percentage", s)
	}
	v, err := strconv.ParseInt(num, 10, 32)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a non-negative percentage", s)
	}
	return v, nil
}
