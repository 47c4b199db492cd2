//go:build !linux

package loom

import (
	"context"
	"errors"
	"io"
	"time"
)

var errNoInline = errors.New("loom: no inline init on this platform")

// runInline fails outside Linux, where there is no inline init
// (Contain never chooses it).
func (c *CLI) runInline(_, _ context.Context, _ context.CancelCauseFunc, start time.Time, _, _ []string, _ *pipes, _ func(io.Reader)) (Output, error) {
	return Output{ExitCode: -1, Duration: time.Since(start)}, startFailure(errNoInline)
}
