// Package tests is the end-to-end suite of the gateway: it builds
// ./cmd/gateway and the fake loom of ./tests/fakeloom, starts gateways on
// free loopback ports, and speaks the contract (api/openapi.yaml) through the
// generated client in api/client, validating every response it receives
// against the contract and checking, at the end, that no planted marker
// (fake loom stderr, host paths, withheld rows, rejected input) reached any
// response.
package tests
