package sidecarrules

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceExpr is one parsed resourcesPolicy expression (resourcesExpr.limits.cpu, ...): it
// computes a sidecar's value of one resource from the combined value of the target containers,
// its variable (cpu or memory).
//
// Values are numbers or quantities, as in OpenKruise: a number meets a quantity as that many
// units (0.5 is 500m), a quantity times or divided by a number is rounded down to a thousandth
// of a unit and keeps its format (600Mi*30% is 180Mi), and a number result becomes a quantity at
// the end (cpu: cores, memory: bytes). Two quantities do not multiply and nothing divides by a
// quantity or by zero; the result must not be negative.
type ResourceExpr struct {
	src      string
	variable string
	root     *exprNode
}

// ParseResourceExpr parses src, an expression over variable ("cpu" or "memory"), and refuses
// what can never be computed, whatever the containers: bad syntax, names other than variable,
// max and min with other than two arguments, a product of two quantity literals, a division by a
// quantity literal or by a constant zero, a constant negative result. These are the expressions
// OpenKruise's webhook refuses (it tries them with the variable as the number 1), less the
// refusals that come only from that 1 (cpu - 2 is negative for 1 core, not for 4).
func ParseResourceExpr(src, variable string) (*ResourceExpr, error) {
	root, err := parseExpr(src)
	if err != nil {
		return nil, err
	}
	e := &ResourceExpr{src: src, variable: variable, root: root}
	v, err := e.eval(root, exprValue{unknown: true})
	if err != nil {
		return nil, err
	}
	if err := notNegative(v); err != nil {
		return nil, err
	}
	return e, nil
}

// Evaluate computes the expression with its variable set to combined.
func (e *ResourceExpr) Evaluate(combined resource.Quantity) (resource.Quantity, error) {
	v, err := e.eval(e.root, exprValue{isQty: true, qty: combined})
	if err != nil {
		return resource.Quantity{}, err
	}
	if err := notNegative(v); err != nil {
		return resource.Quantity{}, err
	}
	if v.isQty {
		return v.qty, nil
	}
	if e.variable == "cpu" {
		return *resource.NewMilliQuantity(int64(v.num*1000), resource.DecimalSI), nil
	}
	return *resource.NewQuantity(int64(v.num), resource.DecimalSI), nil
}

// exprValue is a number or a quantity. While an expression is checked, not computed, the
// variable is unknown (taken for a number, as OpenKruise's webhook takes it), and so is every
// value computed from it: only its kind is followed.
type exprValue struct {
	isQty   bool
	num     float64
	qty     resource.Quantity
	unknown bool
}

func notNegative(v exprValue) error {
	switch {
	case v.unknown:
		return nil
	case v.isQty && v.qty.Sign() < 0:
		return fmt.Errorf("the result %s is negative", v.qty.String())
	case !v.isQty && v.num < 0:
		return fmt.Errorf("the result %g is negative", v.num)
	}
	return nil
}

func (e *ResourceExpr) eval(n *exprNode, variable exprValue) (exprValue, error) {
	switch n.kind {
	case nodeNumber:
		return exprValue{num: n.num}, nil
	case nodeQuantity:
		return exprValue{isQty: true, qty: n.qty.DeepCopy()}, nil
	case nodeVariable:
		if n.name != e.variable {
			return exprValue{}, fmt.Errorf("unknown variable %q: this expression reads %s", n.name, e.variable)
		}
		v := variable
		v.qty = variable.qty.DeepCopy()
		return v, nil
	}
	args := make([]exprValue, len(n.args))
	for i, a := range n.args {
		v, err := e.eval(a, variable)
		if err != nil {
			return exprValue{}, err
		}
		args[i] = v
	}
	switch n.kind {
	case nodeNegate:
		return negate(args[0]), nil
	case nodeCall:
		return pick(n.name, args[0], args[1]), nil
	default:
		return binary(n.op, args[0], args[1])
	}
}

func negate(v exprValue) exprValue {
	if v.isQty {
		v.qty.Neg()
	} else {
		v.num = -v.num
	}
	return v
}

func binary(op byte, l, r exprValue) (exprValue, error) {
	out := exprValue{isQty: l.isQty || r.isQty, unknown: l.unknown || r.unknown}
	switch {
	case op == '*' && l.isQty && r.isQty:
		return exprValue{}, fmt.Errorf("two quantities do not multiply")
	case op == '/' && r.isQty:
		return exprValue{}, fmt.Errorf("a quantity does not divide")
	case op == '/' && !r.unknown && r.num == 0:
		return exprValue{}, fmt.Errorf("division by zero")
	case out.unknown:
		return out, nil
	}
	switch op {
	case '+', '-':
		if !out.isQty {
			out.num = l.num + r.num
			if op == '-' {
				out.num = l.num - r.num
			}
			return out, nil
		}
		out.qty = asQuantity(l)
		if op == '+' {
			out.qty.Add(asQuantity(r))
		} else {
			out.qty.Sub(asQuantity(r))
		}
	case '*':
		switch {
		case l.isQty:
			out.qty = scaled(l.qty, r.num)
		case r.isQty:
			out.qty = scaled(r.qty, l.num)
		default:
			out.num = l.num * r.num
		}
	case '/':
		if l.isQty {
			out.qty = l.qty.DeepCopy()
			out.qty.SetMilli(int64(float64(l.qty.MilliValue()) / r.num))
		} else {
			out.num = l.num / r.num
		}
	}
	return out, nil
}

// scaled is q times f, rounded towards zero to a thousandth, in q's format.
func scaled(q resource.Quantity, f float64) resource.Quantity {
	out := q.DeepCopy()
	out.SetMilli(int64(float64(q.MilliValue()) * f))
	return out
}

// asQuantity is v as a quantity: a number n is n units, kept to a thousandth.
func asQuantity(v exprValue) resource.Quantity {
	if v.isQty {
		return v.qty.DeepCopy()
	}
	return *resource.NewMilliQuantity(int64(v.num*1000), resource.DecimalSI)
}

// pick is max or min of l and r; on a tie, l. With a quantity among them both compare as
// quantities and the result is one.
func pick(name string, l, r exprValue) exprValue {
	out := exprValue{isQty: l.isQty || r.isQty, unknown: l.unknown || r.unknown}
	if out.unknown {
		return out
	}
	var cmp int
	if out.isQty {
		l, r = exprValue{isQty: true, qty: asQuantity(l)}, exprValue{isQty: true, qty: asQuantity(r)}
		cmp = l.qty.Cmp(r.qty)
	} else {
		switch {
		case l.num > r.num:
			cmp = 1
		case l.num < r.num:
			cmp = -1
		}
	}
	if cmp == 0 || (name == "max") == (cmp > 0) {
		return l
	}
	return r
}
