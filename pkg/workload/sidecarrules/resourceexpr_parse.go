package sidecarrules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The grammar of a resourcesPolicy expression, OpenKruise's:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = "-" unary | primary
//	primary = number | quantity | name | name "(" expr ["," expr] ")" | "(" expr ")"
//
// A number is a decimal (1, .5, 2e3) or a percentage (50% is 0.5); a quantity is a number with a
// unit of m, k, M, G, T, P, Ki, Mi, Gi, Ti or Pi. Names (the variable, max, min) are read without
// regard to case.

// quantityUnits are the unit suffixes a quantity literal may carry.
var quantityUnits = []string{"m", "k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi"}

type nodeKind int

const (
	nodeNumber nodeKind = iota
	nodeQuantity
	nodeVariable
	nodeNegate
	nodeBinary
	nodeCall
)

// exprNode is one node of a parsed expression.
type exprNode struct {
	kind nodeKind
	num  float64
	qty  resource.Quantity
	// op is the operator of a nodeBinary: '+', '-', '*' or '/'.
	op byte
	// name is a nodeVariable's or a nodeCall's name, in lower case.
	name string
	args []*exprNode
}

type token struct {
	// kind is 'n' (number), 'q' (quantity), 'i' (name), 0 (end) or the punctuation itself.
	kind byte
	text string
	num  float64
	qty  resource.Quantity
	pos  int
}

type exprParser struct {
	src string
	pos int
	tok token
}

func parseExpr(src string) (*exprNode, error) {
	p := &exprParser{src: src}
	if err := p.advance(); err != nil {
		return nil, err
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != 0 {
		return nil, fmt.Errorf("unexpected %q at offset %d", p.tok.text, p.tok.pos)
	}
	return n, nil
}

func (p *exprParser) advance() error {
	t, err := p.lex()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *exprParser) expr() (*exprNode, error) {
	left, err := p.term()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == '+' || p.tok.kind == '-' {
		op := p.tok.kind
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.term()
		if err != nil {
			return nil, err
		}
		left = &exprNode{kind: nodeBinary, op: op, args: []*exprNode{left, right}}
	}
	return left, nil
}

func (p *exprParser) term() (*exprNode, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == '*' || p.tok.kind == '/' {
		op := p.tok.kind
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.unary()
		if err != nil {
			return nil, err
		}
		left = &exprNode{kind: nodeBinary, op: op, args: []*exprNode{left, right}}
	}
	return left, nil
}

func (p *exprParser) unary() (*exprNode, error) {
	if p.tok.kind != '-' {
		return p.primary()
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	inner, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &exprNode{kind: nodeNegate, args: []*exprNode{inner}}, nil
}

func (p *exprParser) primary() (*exprNode, error) {
	t := p.tok
	switch t.kind {
	case 'n':
		return &exprNode{kind: nodeNumber, num: t.num}, p.advance()
	case 'q':
		return &exprNode{kind: nodeQuantity, qty: t.qty}, p.advance()
	case '(':
		if err := p.advance(); err != nil {
			return nil, err
		}
		inner, err := p.expr()
		if err != nil {
			return nil, err
		}
		return inner, p.expect(')')
	case 'i':
		if err := p.advance(); err != nil {
			return nil, err
		}
		name := strings.ToLower(t.text)
		if p.tok.kind != '(' {
			return &exprNode{kind: nodeVariable, name: name}, nil
		}
		return p.call(name, t.pos)
	case 0:
		return nil, fmt.Errorf("unexpected end of expression")
	default:
		return nil, fmt.Errorf("unexpected %q at offset %d", t.text, t.pos)
	}
}

// call reads the arguments of function name, the current token being its "(".
func (p *exprParser) call(name string, pos int) (*exprNode, error) {
	if name != "max" && name != "min" {
		return nil, fmt.Errorf("unknown function %q at offset %d (there are max and min)", name, pos)
	}
	n := &exprNode{kind: nodeCall, name: name}
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		arg, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, arg)
		if p.tok.kind != ',' {
			break
		}
	}
	if err := p.expect(')'); err != nil {
		return nil, err
	}
	if len(n.args) != 2 {
		return nil, fmt.Errorf("%s at offset %d takes 2 arguments, not %d", name, pos, len(n.args))
	}
	return n, nil
}

func (p *exprParser) expect(kind byte) error {
	if p.tok.kind != kind {
		if p.tok.kind == 0 {
			return fmt.Errorf("missing %q at the end", string(kind))
		}
		return fmt.Errorf("expected %q at offset %d, found %q", string(kind), p.tok.pos, p.tok.text)
	}
	return p.advance()
}

// lex reads the next token.
func (p *exprParser) lex() (token, error) {
	for p.pos < len(p.src) && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
	start := p.pos
	if start == len(p.src) {
		return token{pos: start}, nil
	}
	c := p.src[start]
	switch {
	case strings.IndexByte("+-*/(),", c) >= 0:
		p.pos++
		return token{kind: c, text: string(c), pos: start}, nil
	case c == '.' || isDigit(c):
		return p.lexNumber()
	case isLetter(c):
		for p.pos < len(p.src) && (isLetter(p.src[p.pos]) || isDigit(p.src[p.pos]) || p.src[p.pos] == '_') {
			p.pos++
		}
		return token{kind: 'i', text: p.src[start:p.pos], pos: start}, nil
	default:
		return token{}, fmt.Errorf("unexpected %q at offset %d", string(c), start)
	}
}

// lexNumber reads a number, a percentage or a quantity.
func (p *exprParser) lexNumber() (token, error) {
	start := p.pos
	p.skip(isDigit)
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		p.skip(isDigit)
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		// An exponent only when digits follow: 2E alone is no number, and Ei no unit we take.
		at := p.pos + 1
		if at < len(p.src) && (p.src[at] == '+' || p.src[at] == '-') {
			at++
		}
		if at < len(p.src) && isDigit(p.src[at]) {
			p.pos = at
			p.skip(isDigit)
		}
	}
	digits := p.src[start:p.pos]
	num, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return token{}, fmt.Errorf("%q at offset %d is not a number", digits, start)
	}
	if p.pos < len(p.src) && p.src[p.pos] == '%' {
		p.pos++
		return token{kind: 'n', text: p.src[start:p.pos], num: num / 100, pos: start}, nil
	}
	unitStart := p.pos
	p.skip(isLetter)
	text := p.src[start:p.pos]
	if unitStart == p.pos {
		return token{kind: 'n', text: text, num: num, pos: start}, nil
	}
	if !slices.Contains(quantityUnits, p.src[unitStart:p.pos]) {
		return token{}, fmt.Errorf("%q at offset %d is neither a number nor a quantity (units %s)", text, start, strings.Join(quantityUnits, ", "))
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return token{}, fmt.Errorf("%q at offset %d is not a quantity: %w", text, start, err)
	}
	return token{kind: 'q', text: text, qty: q, pos: start}, nil
}

func (p *exprParser) skip(class func(byte) bool) {
	for p.pos < len(p.src) && class(p.src[p.pos]) {
		p.pos++
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
