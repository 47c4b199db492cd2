package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
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

// beginSitting reads the load average a sitting starts at and prints it.
func beginSitting(w io.Writer) *sitting {
	s := &sitting{}
	s.before, s.err = loadAverage()
	if s.err == nil {
		fmt.Fprintf(w, "load average (1 min) before the sitting: %.2f\n", s.before)
	}
	return s
}

// end reads the load average the sitting ends at and prints both, with
// the sitting marked noisy when either is above noisyLoad.
func (s *sitting) end(w io.Writer) {
	after, err := loadAverage()
	if s.err != nil || err != nil {
		fmt.Fprintf(w, "\nload average: not read (%v)\n", errorsOr(s.err, err))
		return
	}
	verdict := "quiet"
	if s.before > noisyLoad || after > noisyLoad {
		verdict = fmt.Sprintf("NOISY (above %.1f: not a figure to report)", noisyLoad)
	}
	fmt.Fprintf(w, "\nload average (1 min): before %.2f, after %.2f: %s\n", s.before, after, verdict)
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
