// Package yamldoc reads YAML from untrusted input (request bodies,
// scenario files) as its JSON equivalent, with what the document may
// expand to bounded by its size: an alias repeats the node it names, so a
// few hundred kilobytes that alias one long scalar, or aliases of aliases,
// would decode to gigabytes (docs/security.md, "Request bodies").
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
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

// ToJSON converts YAML (or JSON, which is YAML) to JSON as
// sigs.k8s.io/yaml's YAMLToJSONStrict does, refusing a key given twice,
// once it has checked, without expanding them, that the document's aliases
// keep its expanded size within the bound; the error is then ErrExpansion.
// A document without an anchor (&) has no alias and is converted at once.
func ToJSON(data []byte) ([]byte, error) {
	if err := checkExpansion(data); err != nil {
		return nil, err
	}
	return yaml.YAMLToJSONStrict(data)
}

// Bound is the most that a document of n bytes may expand to.
func Bound(n int) int64 {
	return max(MinExpanded, MaxExpansion*int64(n))
}

// checkExpansion parses the first document of data into its nodes, where
// an alias is one node that points at the node it names, and adds up the
// size of the document with every alias expanded, each named node's size
// worked out once: time and memory linear in the input, whatever the
// aliases would expand to.
func checkExpansion(data []byte) error {
	if !bytes.ContainsRune(data, '&') {
		return nil
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return err
	}
	s := sizer{budget: Bound(len(data)), sizes: map[*yamlv3.Node]int64{}, open: map[*yamlv3.Node]bool{}}
	_, err := s.size(&doc)
	if errors.Is(err, ErrExpansion) {
		return fmt.Errorf("%w: past %d bytes, more than %d times its %d bytes", ErrExpansion, s.budget, MaxExpansion, len(data))
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
