//go:build !race

package testkit

// RaceEnabled says whether the tests run under the race detector, which
// slows them and allocates on its own account.
const RaceEnabled = false
