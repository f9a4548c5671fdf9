package fieldpath

import "strings"

// Related reports whether one path is the other or lies inside it
// ("classes[1]" and "classes[1].output_tokens.p95"); the empty path, the
// document's root, holds every path. A problem found at one path already
// explains a problem at a related one: a bad value is reported once, not
// again through the rules it breaks. The scenario's reader and the API
// both drop rule problems by it.
func Related(a, b string) bool {
	inside := func(x, y string) bool {
		return y == "" || strings.HasPrefix(x, y+".") || strings.HasPrefix(x, y+"[")
	}
	return a == b || inside(a, b) || inside(b, a)
}
