// Package agent holds the code generated from api/openapi.yaml for the agent listener's operations.
package agent

//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
