package sidecarrules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResourceExprEvaluate(t *testing.T) {
	cases := []struct {
		expr, variable, combined string
		want                     string
		err                      string
	}{
		{expr: "cpu*50%", variable: "cpu", combined: "200m", want: "100m"},
		{expr: "memory*30%", variable: "memory", combined: "600Mi", want: "180Mi"},
		{expr: "max(cpu*50%, 100m)", variable: "cpu", combined: "150m", want: "100m"},
		{expr: "max(cpu*50%, 100m)", variable: "cpu", combined: "400m", want: "200m"},
		{expr: "cpu + 50m", variable: "cpu", combined: "100m", want: "150m"},
		{expr: "max(memory*20% + 100Mi, 200Mi)", variable: "memory", combined: "800Mi", want: "260Mi"},
		{expr: "500m", variable: "cpu", combined: "1", want: "500m"},
		{expr: "1Gi", variable: "memory", combined: "1", want: "1Gi"},
		{expr: "cpu*50%", variable: "cpu", combined: "0", want: "0"},
		{expr: "memory*50%", variable: "memory", combined: "200Mi", want: "100Mi"},
		// A number result: cores for cpu, bytes for memory.
		{expr: "1", variable: "cpu", combined: "3", want: "1"},
		{expr: "0.5", variable: "cpu", combined: "3", want: "500m"},
		{expr: "1", variable: "memory", combined: "3Gi", want: "1"},
		{expr: "1e3", variable: "memory", combined: "3Gi", want: "1k"},
		{expr: "2.5e-1 + .25", variable: "cpu", combined: "1", want: "500m"},
		// Precedence, associativity, unary minus, parentheses, case.
		{expr: "cpu + 100m * 2", variable: "cpu", combined: "1", want: "1200m"},
		{expr: "(cpu + 100m) * 2", variable: "cpu", combined: "1", want: "2200m"},
		{expr: "2 - 1 - 500m", variable: "cpu", combined: "1", want: "500m"},
		{expr: "cpu / 2 / 2", variable: "cpu", combined: "1", want: "250m"},
		{expr: "-cpu + 2", variable: "cpu", combined: "500m", want: "1500m"},
		{expr: "2 * -100m + cpu", variable: "cpu", combined: "1", want: "800m"},
		{expr: "MAX(CPU, 1)", variable: "cpu", combined: "2", want: "2"},
		{expr: "min(cpu, 1)", variable: "cpu", combined: "2", want: "1"},
		{expr: "min(cpu, 1)", variable: "cpu", combined: "500m", want: "500m"},
		{expr: "max(1, 2) * cpu", variable: "cpu", combined: "300m", want: "600m"},
		// Rounded down to a thousandth, the quantity's format kept.
		{expr: "cpu / 3", variable: "cpu", combined: "1", want: "333m"},
		{expr: "memory * 10%", variable: "memory", combined: "1Gi", want: "107374182400m"},
		{expr: "memory / 2", variable: "memory", combined: "1Gi", want: "512Mi"},
		// Errors only the combined value shows.
		{expr: "cpu - 1", variable: "cpu", combined: "500m", err: "the result -500m is negative"},
		{expr: "cpu * cpu", variable: "cpu", combined: "1", err: "two quantities do not multiply"},
		{expr: "cpu * 2Mi", variable: "cpu", combined: "1", err: "two quantities do not multiply"},
		{expr: "1 / cpu", variable: "cpu", combined: "1", err: "a quantity does not divide"},
	}
	for _, tc := range cases {
		t.Run(tc.variable+": "+tc.expr, func(t *testing.T) {
			e, err := ParseResourceExpr(tc.expr, tc.variable)
			require.NoError(t, err)
			got, err := e.Evaluate(resource.MustParse(tc.combined))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestResourceExprEvaluateLeavesCombinedAlone(t *testing.T) {
	combined := resource.MustParse("1.5")
	e, err := ParseResourceExpr("-cpu + 2*cpu", "cpu")
	require.NoError(t, err)
	got, err := e.Evaluate(combined)
	require.NoError(t, err)
	assert.Equal(t, "1500m", got.String())
	assert.Equal(t, "1500m", combined.String())
}

func TestParseResourceExprRefuses(t *testing.T) {
	cases := []struct {
		expr, variable, err string
	}{
		{"", "cpu", "unexpected end of expression"},
		{"cpu +", "cpu", "unexpected end of expression"},
		{"(cpu", "cpu", `missing ")" at the end`},
		{"cpu)", "cpu", `unexpected ")" at offset 3`},
		{"cpu 2", "cpu", `unexpected "2" at offset 4`},
		{"cpu ** 2", "cpu", `unexpected "*" at offset 5`},
		{"cpu & 1", "cpu", `unexpected "&" at offset 4`},
		{"50 %", "cpu", `unexpected "%" at offset 3`},
		{"+cpu", "cpu", `unexpected "+" at offset 0`},
		{"max(cpu)", "cpu", "max at offset 0 takes 2 arguments, not 1"},
		{"min(cpu, 1, 2)", "cpu", "min at offset 0 takes 2 arguments, not 3"},
		{"max()", "cpu", `unexpected ")"`},
		{"sum(cpu, 1)", "cpu", `unknown function "sum"`},
		{"memory*50%", "cpu", `unknown variable "memory": this expression reads cpu`},
		{"cpu*50%", "memory", `unknown variable "cpu": this expression reads memory`},
		{"cores", "cpu", `unknown variable "cores"`},
		{"2x", "cpu", `"2x" at offset 0 is neither a number nor a quantity`},
		{"0.5cpu", "cpu", `"0.5cpu" at offset 0 is neither a number nor a quantity`},
		{"1Ei", "memory", `"1Ei" at offset 0 is neither a number nor a quantity`},
		{".", "cpu", `"." at offset 0 is not a number`},
		{"1.2.3", "cpu", `unexpected ".3" at offset 3`},
		{"2Mi * 3Mi", "memory", "two quantities do not multiply"},
		{"memory / 2Mi", "memory", "a quantity does not divide"},
		{"cpu / 0", "cpu", "division by zero"},
		{"cpu / (1 - 1)", "cpu", "division by zero"},
		{"100m - 200m", "cpu", "the result -100m is negative"},
		{"-1", "cpu", "the result -1 is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := ParseResourceExpr(tc.expr, tc.variable)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestParseResourceExprAdmits: what only some combined values break is left to injection, as
// OpenKruise's webhook admits it (or refuses it only for its trial value 1).
func TestParseResourceExprAdmits(t *testing.T) {
	for _, expr := range []string{"cpu - 2", "cpu / (cpu - 1)", "cpu * 2Mi", "cpu * cpu", "max(cpu - 3, 100m)", " cpu\t* 50% "} {
		t.Run(expr, func(t *testing.T) {
			_, err := ParseResourceExpr(expr, "cpu")
			assert.NoError(t, err)
		})
	}
}
