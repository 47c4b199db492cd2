//go:build !race

package loom

const raceEnabled = false
