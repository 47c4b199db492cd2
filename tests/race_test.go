//go:build race

package tests

// raceEnabled: the suite runs under -race, so the gateway is built with
// -race too and a data race in it fails its clean exit (status 66).
const raceEnabled = true
