// Package seccomp holds the seccomp profile to run the gateway in a
// container with (loom-gateway.json): Docker's default profile
// (testdata/docker-default.json) plus exactly what each loom command's
// PID namespace needs without CAP_SYS_ADMIN. Under Docker's default, which
// Kubernetes' RuntimeDefault follows, the gateway can make no namespace
// and falls back to a process group. Its test derives the profile from
// Docker's and fails when the file differs; `go test ./deploy/seccomp
// -update` rewrites it. docs/deploy/container.md says how to use it.
package seccomp

import _ "embed"

// Profile is loom-gateway.json.
//
//go:embed loom-gateway.json
var Profile []byte
