//go:build !race

package loomref

const raceEnabled = false
