//go:build !race

package httptrace

const raceEnabled = false
