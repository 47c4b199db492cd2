// Package archtest holds the architecture test: the boundaries between the
// gateway's packages that docs/ARCHITECTURE.md draws, checked over the
// module's import graph as one `go list -deps -test -json` call reports it.
// The package has no code of its own; everything is in its tests.
package archtest
