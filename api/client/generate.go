// Package client is the Go client generated from api/openapi.yaml; the
// end-to-end tests speak the contract through it.
package client

//go:generate go tool oapi-codegen -config cfg.yaml ../openapi.yaml
