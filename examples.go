// Package planner holds the example scenarios of docs/examples, embedded so
// that the binary can plan and serve them with no files beside it.
package planner

import (
	"embed"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed docs/examples/*.yaml
var examples embed.FS

// ExampleNames lists the embedded example scenarios by name (file name
// without ".yaml"), sorted.
func ExampleNames() []string {
	entries, _ := fs.ReadDir(examples, "docs/examples")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Example returns the YAML text of the named example scenario.
func Example(name string) ([]byte, bool) {
	b, err := examples.ReadFile(path.Join("docs/examples", name+".yaml"))
	return b, err == nil
}
