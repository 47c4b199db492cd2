package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// noisyLoad is the one-minute load average above which a sitting is
// marked noisy: its figures are not taken on a quiet machine.
const noisyLoad = 1.0

// sitting is the load average of the machine before and after one
// measurement sitting.
type sitting struct {
	before float64
	err    error
}

// quietWait bounds how long beginSitting waits for the machine to settle
// (--quiet-wait; 0 starts at once, for a profile rather than a figure).
var quietWait = 5 * time.Minute

// beginSitting waits, for at most quietWait, until the one-minute load
// average is at most noisyLoad (what an earlier sitting or build left
// behind decays in a minute or two), then reads the load average the
// sitting starts at and prints it.
func beginSitting(w io.Writer) *sitting {
	s := &sitting{}
	deadline := time.Now().Add(quietWait)
	for {
		s.before, s.err = loadAverage()
		if s.err != nil || s.before <= noisyLoad || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	if s.err == nil {
		fmt.Fprintf(w, "load average (1 min) before the sitting: %.2f\n", s.before)
	}
	return s
}

// end reads the load average the sitting ends at and prints both, with
// the sitting marked noisy when it began above noisyLoad. The load after
// includes the sitting's own (its clients, the gateway, the fake looms:
// up to --clients runnable at once), so it is written down, not judged.
func (s *sitting) end(w io.Writer) {
	after, err := loadAverage()
	if s.err != nil || err != nil {
		fmt.Fprintf(w, "\nload average: not read (%v)\n", errorsOr(s.err, err))
		return
	}
	verdict := "quiet"
	if s.before > noisyLoad {
		verdict = fmt.Sprintf("NOISY (above %.1f: not a figure to report)", noisyLoad)
	}
	fmt.Fprintf(w, "\nload average (1 min): before %.2f, after %.2f (with the sitting's own load): %s\n", s.before, after, verdict)
}

func errorsOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadAverage reads the one-minute load average from /proc/loadavg.
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
