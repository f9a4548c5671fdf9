// Package configs holds the configuration files shipped with planner: an
// annotated example of the server configuration and the default quota-tier
// catalogue, embedded so that the binary serves them with no files beside it.
package configs

import _ "embed"

// Tiers is the YAML text of tiers.yaml, the default quota-tier catalogue.
//
//go:embed tiers.yaml
var Tiers []byte
