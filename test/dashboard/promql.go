package dashboard

import (
	"fmt"
	"strconv"
	"strings"
)

// Selector is one vector selector of a PromQL expression: the metric it names and its label
// matchers.
type Selector struct {
	Metric   string
	Matchers []Matcher
}

// Matcher is one label matcher of a selector, its value unquoted.
type Matcher struct {
	Label, Op, Value string
}

// Components lists the values the selector's `component` matcher admits: the value of an `=`
// matcher, or the alternatives of an `=~` matcher written as a plain a|b list. It is nil when
// there is no such matcher, or one whose values cannot be listed.
func (s Selector) Components() []string {
	for _, m := range s.Matchers {
		if m.Label != "component" {
			continue
		}
		switch m.Op {
		case "=":
			return []string{m.Value}
		case "=~":
			alts := strings.Split(m.Value, "|")
			for _, a := range alts {
				if a == "" || strings.ContainsAny(a, `.*+?()[]{}^$\`) {
					return nil
				}
			}
			return alts
		}
	}
	return nil
}

// The PromQL functions and aggregation operators (Prometheus 2.x and 3.x). A name followed by
// "(" that is in neither set is reported as an error rather than guessed at: it is a typo, or a
// function too new for the Prometheus a user runs.
var (
	functions = set("abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
		"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time",
		"day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv",
		"double_exponential_smoothing", "end", "exp", "floor", "histogram_avg", "histogram_count",
		"histogram_fraction", "histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum",
		"holt_winters", "hour", "idelta", "increase", "info", "irate", "label_join", "label_replace",
		"last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time", "minute",
		"month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
		"round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc",
		"sqrt", "start", "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time",
		"timestamp", "vector", "year")
	aggregations = set("avg", "bottomk", "count", "count_values", "group", "limit_ratio", "limitk", "max", "min",
		"quantile", "stddev", "stdvar", "sum", "topk")
	// Keywords followed by a parenthesised list of label names (or by nothing, for group_left
	// and group_right).
	labelListKeywords = set("by", "without", "on", "ignoring", "group_left", "group_right")
	// Other keywords: binary operators, modifiers and the special float values (any case).
	keywords = set("and", "or", "unless", "offset", "bool", "atan2", "inf", "nan")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Selectors returns the vector selectors of a PromQL expression in the order they appear. It
// reads the expression token by token, as the PromQL lexer does: strings, numbers and durations,
// range brackets, label lists after by/without/on/ignoring/group_left/group_right, keywords and
// function calls are passed over; every other identifier is a metric name, with the label
// matchers that follow it. It does not check the expression's grammar beyond that (Prometheus
// does, when the queries are run); it refuses what it cannot read soundly: a selector without a
// metric name, a __name__ matcher, an unknown function, an unexpanded Grafana variable.
func Selectors(expr string) ([]Selector, error) {
	s := &scanner{src: expr}
	var out []Selector
	for {
		s.skipSpace()
		if s.eof() {
			return out, nil
		}
		c := s.peek()
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := s.str(); err != nil {
				return nil, err
			}
		case c == '#':
			s.skipLine()
		case c == '{':
			return nil, s.errorf("a selector without a metric name")
		case c == '[':
			if err := s.skipRange(); err != nil {
				return nil, err
			}
		case c == '$':
			return nil, s.errorf("an unexpanded Grafana variable")
		case isDigit(c) || (c == '.' && isDigit(s.at(1))):
			s.number()
		case isIdentStart(c):
			sel, ok, err := s.word()
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, sel)
			}
		default:
			s.pos++ // operators, parentheses, commas, @
		}
	}
}

// scanner walks a PromQL expression.
type scanner struct {
	src string
	pos int
}

func (s *scanner) eof() bool  { return s.pos >= len(s.src) }
func (s *scanner) peek() byte { return s.at(0) }

func (s *scanner) at(off int) byte {
	if s.pos+off >= len(s.src) {
		return 0
	}
	return s.src[s.pos+off]
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d of %q: %s", s.pos, s.src, fmt.Sprintf(format, args...))
}

func (s *scanner) skipSpace() {
	for !s.eof() && strings.IndexByte(" \t\r\n", s.peek()) >= 0 {
		s.pos++
	}
}

func (s *scanner) skipLine() {
	for !s.eof() && s.peek() != '\n' {
		s.pos++
	}
}

// skipPast moves past the next end byte outside strings.
func (s *scanner) skipPast(end byte) error {
	start := s.pos
	s.pos++
	for !s.eof() {
		switch c := s.peek(); {
		case c == end:
			s.pos++
			return nil
		case c == '"' || c == '\'' || c == '`':
			if _, err := s.str(); err != nil {
				return err
			}
		default:
			s.pos++
		}
	}
	s.pos = start
	return s.errorf("unterminated %q", s.src[start])
}

// skipRange moves past a range or subquery's brackets, which hold durations only.
func (s *scanner) skipRange() error {
	end := strings.IndexByte(s.src[s.pos:], ']')
	if end < 0 {
		return s.errorf("unterminated range")
	}
	if strings.Contains(s.src[s.pos:s.pos+end], "$") {
		return s.errorf("an unexpanded Grafana variable")
	}
	s.pos += end + 1
	return nil
}

// number passes over a number or a duration: 0.99, 1e-3, 0x1f, 5m, 1h30m.
func (s *scanner) number() {
	for !s.eof() {
		c := s.peek()
		switch {
		case isDigit(c) || isLetter(c) || c == '.' || c == '_':
			s.pos++
		case (c == '+' || c == '-') && (s.src[s.pos-1] == 'e' || s.src[s.pos-1] == 'E') &&
			!strings.HasPrefix(strings.ToLower(s.src[:s.pos]), "0x"):
			s.pos++
		default:
			return
		}
	}
}

// str reads a quoted string and returns its value.
func (s *scanner) str() (string, error) {
	quote := s.peek()
	start := s.pos
	s.pos++
	for !s.eof() {
		c := s.peek()
		switch {
		case c == '\\' && quote != '`':
			s.pos += 2
		case c == quote:
			s.pos++
			return unquote(s.src[start:s.pos])
		default:
			s.pos++
		}
	}
	s.pos = start
	return "", s.errorf("unterminated string")
}

// unquote reads a PromQL string literal: Go's escapes in double or single quotes, none in
// backquotes.
func unquote(lit string) (string, error) {
	if lit[0] == '\'' {
		inner := lit[1 : len(lit)-1]
		inner = strings.ReplaceAll(inner, `\'`, `'`)
		inner = strings.ReplaceAll(inner, `"`, `\"`)
		lit = `"` + inner + `"`
	}
	v, err := strconv.Unquote(lit)
	if err != nil {
		return "", fmt.Errorf("string %s: %w", lit, err)
	}
	return v, nil
}

func (s *scanner) ident() string {
	start := s.pos
	for !s.eof() && (isIdentStart(s.peek()) || isDigit(s.peek())) {
		s.pos++
	}
	return s.src[start:s.pos]
}

// word reads an identifier and what belongs to it; ok says it was a metric selector.
func (s *scanner) word() (sel Selector, ok bool, err error) {
	w := s.ident()
	switch {
	case labelListKeywords[w]:
		s.skipSpace()
		if s.peek() == '(' {
			return Selector{}, false, s.skipPast(')')
		}
		return Selector{}, false, nil
	case keywords[strings.ToLower(w)]:
		return Selector{}, false, nil
	}
	s.skipSpace()
	if s.peek() == '(' || (aggregations[w] && s.nextWordIn(labelListKeywords)) {
		if !functions[w] && !aggregations[w] {
			return Selector{}, false, s.errorf("unknown function %q", w)
		}
		return Selector{}, false, nil
	}
	if strings.Contains(w, ":") {
		// Recording rules' names: kruise ships none, so a dashboard query cannot rely on one.
		return Selector{}, false, s.errorf("%q is a recording rule's name, not a metric kruise exports", w)
	}
	sel = Selector{Metric: w}
	if s.peek() == '{' {
		if sel.Matchers, err = s.matchers(); err != nil {
			return Selector{}, false, err
		}
	}
	return sel, true, nil
}

// nextWordIn says whether the next identifier (after spaces) is one of words, without moving.
func (s *scanner) nextWordIn(words map[string]bool) bool {
	save := s.pos
	defer func() { s.pos = save }()
	s.skipSpace()
	return words[s.ident()]
}

// matchers reads {label op "value", ...}.
func (s *scanner) matchers() ([]Matcher, error) {
	s.pos++ // {
	var out []Matcher
	for {
		s.skipSpace()
		switch {
		case s.peek() == '}':
			s.pos++
			return out, nil
		case s.eof():
			return nil, s.errorf("unterminated label matchers")
		case !isIdentStart(s.peek()):
			return nil, s.errorf("a label name expected")
		}
		m := Matcher{Label: s.ident()}
		if m.Label == "__name__" {
			return nil, s.errorf("a __name__ matcher: name the metric instead")
		}
		s.skipSpace()
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s.src[s.pos:], op) {
				m.Op = op
				s.pos += len(op)
				break
			}
		}
		if m.Op == "" {
			return nil, s.errorf("a matcher operator expected after label %q", m.Label)
		}
		s.skipSpace()
		if c := s.peek(); c != '"' && c != '\'' && c != '`' {
			return nil, s.errorf("a quoted value expected for label %q", m.Label)
		}
		v, err := s.str()
		if err != nil {
			return nil, err
		}
		m.Value = v
		out = append(out, m)
		s.skipSpace()
		if s.peek() == ',' {
			s.pos++
		}
	}
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentStart(c byte) bool { return isLetter(c) || c == '_' || c == ':' }
