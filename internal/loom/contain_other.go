//go:build !linux

package loom

import "errors"

// errNoNamespaces: outside Linux there is no PID namespace.
var errNoNamespaces = errors.New("loom: no pid namespaces outside linux")

// Contain returns the zero Containment and an error outside Linux.
func Contain(string) (Containment, error) { return Containment{}, errNoNamespaces }
