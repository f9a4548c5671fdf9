// Package fieldpath holds the problems found in a document, each located
// by its path ("classes[1].output_tokens.p95", "tiers[10].rpm"), and
// orders the paths the way a reader expects, so that every list of
// problems reads in document order.
package fieldpath

import (
	"fmt"
	"strconv"
	"strings"
)

// Compare orders two paths field by field, comparing list indexes as
// numbers (classes[2] before classes[10]) and names as text; a path sorts
// before the paths below it. It returns a negative number, zero or a
// positive number, as cmp.Compare does.
func Compare(a, b string) int {
	split := func(p string) []string {
		return strings.FieldsFunc(p, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
	}
	pa, pb := split(a), split(b)
	for i := range min(len(pa), len(pb)) {
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		switch {
		case errA == nil && errB == nil && na != nb:
			return na - nb
		case (errA != nil || errB != nil) && pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}

// Error is one problem in a document, located by its path
// ("classes[1].output_tokens.p95", "tiers[2].rpm"): the one field-error
// type of the scenario, the simulation options and the configuration.
type Error struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Error reads "path: message", or the message alone at the document's root.
func (e Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Errors is every problem found in a document.
type Errors []Error

// Error lists the problems, one a line after a count when there are several.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(es))
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Index is the path of element i of the list at path: Index("steps", 2)
// is "steps[2]".
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Join is the path of field below the field at path: Join("budget",
// "max_requests") is "budget.max_requests"; at the root (path "") it is
// field itself.
func Join(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	case strings.HasPrefix(field, "["):
		return path + field
	}
	return path + "." + field
}

// Names renames the paths of one document into the names a front end
// gives its fields, with one table: a command line's flags
// ("budget.max_requests" is "--max-requests") or a request body's
// locations ("steps" is "body.steps"). The longest entry that is the path
// or a field above it names the problem.
type Names struct {
	// Fields maps a path without list indexes, or a field above it, to its
	// name.
	Fields map[string]string
	// Other names a path that no entry covers; when empty, the path keeps
	// its own name.
	Other string
	// Below keeps what follows the entry in the path, list indexes and
	// fields below it ("steps[2]" is "body.steps[2]"); without it the name
	// is the entry's alone ("steps[2]" is "--steps").
	Below bool
}

// Of is the name of path.
func (n Names) Of(path string) string {
	for end := len(path); end > 0; end = strings.LastIndexAny(path[:end], ".[") {
		if name, ok := n.Fields[path[:end]]; ok {
			if n.Below {
				return Join(name, strings.TrimPrefix(path[end:], "."))
			}
			return name
		}
	}
	if n.Other != "" {
		return n.Other
	}
	return path
}

// Rename returns the problems under their names, in the same order.
func (n Names) Rename(errs []Error) Errors {
	out := make(Errors, len(errs))
	for i, e := range errs {
		out[i] = Error{Path: n.Of(e.Path), Message: e.Message}
	}
	return out
}
