//go:build race

package loomref

// raceEnabled: the race detector slows the equivalence tests tenfold, so
// they generate fewer payloads under it (the fuzz step runs without it).
const raceEnabled = true
