// Package api embeds the contract, api/openapi.yaml, that every HTTP route
// of the gateway is generated from and validated against.
package api

import _ "embed"

// Spec is the text of api/openapi.yaml, served at GET /openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte
