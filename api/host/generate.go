// Package host holds the code generated from api/openapi.yaml for the host listener's operations.
package host

//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
