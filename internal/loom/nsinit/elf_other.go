//go:build linux && !amd64

package nsinit

// elf is empty where there is no C init: Executable fails, and package
// loom runs the gateway's own executable as the init.
var elf []byte
