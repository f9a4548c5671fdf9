// Package yamldoc reads YAML from untrusted input (request bodies,
// scenario files) as its JSON equivalent, with what the document may
// expand to bounded by its size: an alias repeats the node it names, so a
// few hundred kilobytes that alias one long scalar, or aliases of aliases,
// would decode to gigabytes (docs/security.md, "Request bodies").
//
// Plain scalars are resolved by the YAML 1.2 core schema (YAML 1.2.2,
// §10.3): only true and false (in any of their three spellings) are
// booleans, only null, ~ and the empty scalar are null, numbers are
// decimal, 0o octal or 0x hexadecimal integers and decimal floats, and
// everything else is a string. So a class named y, no or on stays a
// string, as it is in JSON, where YAML 1.1 would read it as a boolean.
package yamldoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// The bound on a document with its aliases expanded: MinExpanded bytes,
// or MaxExpansion times the size of the document as written when that is
// more. A document without aliases is never near it.
const (
	MinExpanded  = 1 << 20
	MaxExpansion = 8
)

// ErrExpansion is the error of a document whose aliases expand it beyond
// the bound.
var ErrExpansion = errors.New("the document's aliases expand it too far")

// ErrDocuments is the error of a stream of more than one YAML document,
// of which only one would be read.
var ErrDocuments = errors.New("it holds more than one YAML document (a --- line starts another); give one")

// ToJSON converts YAML (or JSON, which is YAML) to JSON, with object keys
// in sorted order, refusing a key given twice and a number JSON cannot
// hold (an infinity or NaN), each as a PathError naming where it is,
// once it has checked, without expanding them,
// that the document's aliases keep its expanded size within the bound;
// the error is then ErrExpansion. Merge keys (<<) are applied as YAML 1.1
// defines them, a key of the mapping itself taking precedence. A stream
// of more than one document, whatever the documents after the first
// hold, is refused with ErrDocuments rather than read as its first.
func ToJSON(data []byte) ([]byte, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc yamlv3.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if doc.Kind == 0 { // no document at all: empty, or only comments
		return []byte("null"), nil
	}
	var next yamlv3.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, ErrDocuments
	}
	if bytes.ContainsRune(data, '&') {
		if err := checkExpansion(&doc, len(data)); err != nil {
			return nil, err
		}
	}
	v, err := value(&doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Bound is the most that a document of n bytes may expand to.
func Bound(n int) int64 {
	return max(MinExpanded, MaxExpansion*int64(n))
}

// checkExpansion adds up the size of the parsed document of n bytes with
// every alias expanded, where an alias is one node that points at the
// node it names, each named node's size worked out once: time and memory
// linear in the input, whatever the aliases would expand to.
func checkExpansion(doc *yamlv3.Node, n int) error {
	s := sizer{budget: Bound(n), sizes: map[*yamlv3.Node]int64{}, open: map[*yamlv3.Node]bool{}}
	_, err := s.size(doc)
	if errors.Is(err, ErrExpansion) {
		return fmt.Errorf("%w: past %d bytes, more than %d times its %d bytes", ErrExpansion, s.budget, MaxExpansion, n)
	}
	return err
}

// sizer adds up a document's expanded size, about the length of its JSON
// form: a scalar's text and two bytes (quotes, a separator), two for each
// mapping or sequence and one for each of its entries.
type sizer struct {
	budget int64
	sizes  map[*yamlv3.Node]int64 // of the named nodes, once known
	open   map[*yamlv3.Node]bool  // named nodes being added up
}

func (s *sizer) size(n *yamlv3.Node) (int64, error) {
	if n.Kind == yamlv3.AliasNode {
		n = n.Alias
		if n == nil {
			return 0, errors.New("an alias names no anchor")
		}
	}
	if v, ok := s.sizes[n]; ok {
		return v, nil
	}
	if n.Kind == yamlv3.ScalarNode {
		return int64(len(n.Value)) + 2, nil
	}
	if n.Anchor != "" {
		if s.open[n] {
			return 0, fmt.Errorf("the anchor %q is used inside its own node", n.Anchor)
		}
		s.open[n] = true
		defer delete(s.open, n)
	}
	total := int64(2)
	for _, c := range n.Content {
		v, err := s.size(c)
		if err != nil {
			return 0, err
		}
		if total += v + 1; total > s.budget {
			return 0, ErrExpansion
		}
	}
	if n.Anchor != "" {
		s.sizes[n] = total
	}
	return total, nil
}

// PathError is a problem of one value of a document (a number JSON
// cannot hold, a key given twice, a tag JSON has not) with where it is:
// Path as a scenario's problems name a field ("quotas[0].rpm").
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *PathError) Unwrap() error { return e.Err }

// within puts err, a problem inside the value at step (a key, or "[i]"
// of a list), under that step of its path.
func within(step string, err error) error {
	pe, ok := err.(*PathError)
	switch {
	case !ok:
		return &PathError{Path: step, Err: err}
	case strings.HasPrefix(pe.Path, "["):
		pe.Path = step + pe.Path
	default:
		pe.Path = step + "." + pe.Path
	}
	return pe
}

// value is the JSON value of a node: map[string]any, []any, string, bool,
// nil, int64, float64 or json.Number (an integer beyond int64).
func value(n *yamlv3.Node) (any, error) {
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return value(n.Content[0])
	case yamlv3.AliasNode:
		if n.Alias == nil {
			return nil, errors.New("an alias names no anchor")
		}
		return value(n.Alias)
	case yamlv3.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := value(c)
			if err != nil {
				return nil, within(fmt.Sprintf("[%d]", i), err)
			}
			out = append(out, v)
		}
		return out, nil
	case yamlv3.MappingNode:
		return mapping(n)
	case yamlv3.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: a node of unknown kind", n.Line)
}

// mapping is the object of a mapping node, with its merge keys applied.
func mapping(n *yamlv3.Node) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merged []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yamlv3.ScalarNode && k.Tag == "!!merge" {
			ms, err := merges(v)
			if err != nil {
				return nil, err
			}
			merged = append(merged, ms...)
			continue
		}
		key, err := keyOf(k)
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, within(key, fmt.Errorf("line %d: key %q already set in this mapping", k.Line, key))
		}
		val, err := value(v)
		if err != nil {
			return nil, within(key, err)
		}
		out[key] = val
	}
	// The first merged mapping wins over later ones, and the mapping's own
	// keys over all of them.
	for _, m := range merged {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// merges are the mappings a merge key names: one mapping, or a sequence
// of them.
func merges(v *yamlv3.Node) ([]map[string]any, error) {
	for v.Kind == yamlv3.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	var nodes []*yamlv3.Node
	switch v.Kind {
	case yamlv3.MappingNode:
		nodes = []*yamlv3.Node{v}
	case yamlv3.SequenceNode:
		nodes = v.Content
	default:
		return nil, fmt.Errorf("line %d: a merge key takes a mapping or a list of mappings", v.Line)
	}
	var out []map[string]any
	for _, c := range nodes {
		for c.Kind == yamlv3.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		if c.Kind != yamlv3.MappingNode {
			return nil, fmt.Errorf("line %d: a merge key takes a mapping or a list of mappings", c.Line)
		}
		m, err := mapping(c)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// keyOf is the string a mapping key stands for: JSON keys are strings, so
// a scalar key is its text as written (1, true, null); a key that is a
// mapping or a list is refused.
func keyOf(k *yamlv3.Node) (string, error) {
	for k.Kind == yamlv3.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yamlv3.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
	}
	return k.Value, nil
}

// The YAML 1.2 core schema's plain scalars (YAML 1.2.2, §10.3.2).
var (
	coreInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	coreOct   = regexp.MustCompile(`^0o[0-7]+$`)
	coreHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	coreFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	coreInf   = regexp.MustCompile(`^[-+]?\.(inf|Inf|INF)$`)
	coreNaN   = regexp.MustCompile(`^\.(nan|NaN|NAN)$`)
)

// scalar resolves a scalar: a quoted or block scalar is a string; a plain
// one by the core schema; an explicit tag (!!str, !!int, ...) as it says.
func scalar(n *yamlv3.Node) (any, error) {
	tag := ""
	switch {
	case n.Style&yamlv3.TaggedStyle != 0:
		tag = n.Tag
	case n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0:
		return n.Value, nil
	}
	v := n.Value
	switch tag {
	case "!!str", "tag:yaml.org,2002:str":
		return v, nil
	case "", "!!null", "!!bool", "!!int", "!!float":
	default:
		return nil, fmt.Errorf("line %d: the tag %s is not one JSON can hold", n.Line, tag)
	}
	switch {
	case v == "" || v == "~" || v == "null" || v == "Null" || v == "NULL":
		if tag == "" || tag == "!!null" {
			return nil, nil
		}
	case v == "true" || v == "True" || v == "TRUE":
		if tag == "" || tag == "!!bool" {
			return true, nil
		}
	case v == "false" || v == "False" || v == "FALSE":
		if tag == "" || tag == "!!bool" {
			return false, nil
		}
	case coreInt.MatchString(v), coreOct.MatchString(v), coreHex.MatchString(v):
		if tag == "" || tag == "!!int" || tag == "!!float" {
			return integer(v)
		}
	case coreFloat.MatchString(v):
		if tag == "" || tag == "!!float" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Errorf("line %d: the number %s is beyond what JSON holds", n.Line, v)
			}
			return f, nil
		}
	case coreInf.MatchString(v), coreNaN.MatchString(v):
		if tag == "" || tag == "!!float" {
			return nil, fmt.Errorf("line %d: %s is not a number JSON can hold", n.Line, v)
		}
	}
	if tag != "" {
		return nil, fmt.Errorf("line %d: %q is not a valid %s", n.Line, v, tag)
	}
	return v, nil
}

// integer is a core-schema integer: an int64 when it fits, else its
// decimal digits as a json.Number.
func integer(v string) (any, error) {
	digits, base := v, 10
	switch {
	case strings.HasPrefix(v, "0o"):
		digits, base = v[2:], 8
	case strings.HasPrefix(v, "0x"):
		digits, base = v[2:], 16
	}
	b, ok := new(big.Int).SetString(digits, base)
	if !ok {
		return nil, fmt.Errorf("%q is not an integer", v)
	}
	if b.IsInt64() {
		return b.Int64(), nil
	}
	return json.Number(b.String()), nil
}
