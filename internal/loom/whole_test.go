package loom

// The runner's tests read a command's stdout whole: Run is RunTool with
// stdout kept whole (capWriter) instead of read by Condense. The gateway
// never holds stdout whole (RunTool); package loomref's reading of it
// whole is the reference Condense is held to.

import (
	"context"
	"io"
	"math"
)

// whole is what Run leaves: a command's stdout whole, and what RunTool's
// Output has (its exit code, signal, duration and stderr tail; Condensed
// empty).
type whole struct {
	Output
	Stdout []byte
}

// Run is RunTool with stdout kept whole, for the runner's tests: the same
// process, errors and Output, but Stdout in place of Condensed.
func (c *CLI) Run(ctx context.Context, argv, env []string) (whole, error) {
	w := capWriter{limit: math.MaxInt64, onLimit: func() {}}
	out, err := c.run(ctx, argv, env, func(r io.Reader) { _, _ = w.ReadFrom(r) })
	o := whole{Output: out}
	if err == nil {
		o.Stdout = w.Bytes()
	}
	return o, err
}

// capWriter keeps what is written up to limit bytes; the write that would
// pass it calls onLimit once and fails.
//
// It keeps stdout in chunks that double from firstChunk up to maxChunk, so
// that growing never copies, and Bytes joins them once into a slice of
// exactly the length read: a 50 MB payload is held in 50 MB, where a
// doubling buffer would hold up to twice that for as long as the call
// measures it. It reads the pipe itself (io.ReaderFrom), straight into its
// chunks.
type capWriter struct {
	chunks   [][]byte // full chunks, in order
	cur      []byte   // the chunk being filled
	n        int64    // bytes kept
	limit    int64
	exceeded bool
	onLimit  func()
}

const (
	firstChunk = 16 << 10
	maxChunk   = 4 << 20
)

// room returns the free space of the current chunk, starting a new one when
// it is full. A chunk is never larger than the bytes that can still be
// kept, plus the one that passes the limit.
func (w *capWriter) room() []byte {
	if len(w.cur) == cap(w.cur) {
		size := firstChunk
		if w.cur != nil {
			w.chunks = append(w.chunks, w.cur)
			size = min(2*cap(w.cur), maxChunk)
		}
		size = int(min(int64(size), max(w.limit-w.n+1, 1)))
		w.cur = make([]byte, 0, size)
	}
	return w.cur[len(w.cur):cap(w.cur)]
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.exceeded {
		return 0, ErrStdoutLimit
	}
	if w.n+int64(len(p)) > w.limit {
		w.exceeded = true
		w.onLimit()
		return 0, ErrStdoutLimit
	}
	for rest := p; len(rest) > 0; {
		k := copy(w.room(), rest)
		w.cur = w.cur[:len(w.cur)+k]
		w.n += int64(k)
		rest = rest[k:]
	}
	return len(p), nil
}

// ReadFrom reads r to its end into the chunks, failing as Write does once
// more than limit bytes have come.
func (w *capWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if w.exceeded {
			return total, ErrStdoutLimit
		}
		k, err := r.Read(w.room())
		w.cur = w.cur[:len(w.cur)+k]
		w.n += int64(k)
		total += int64(k)
		if w.n > w.limit {
			w.exceeded = true
			w.onLimit()
			return total, ErrStdoutLimit
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Bytes returns what was kept, in one slice of exactly that length unless
// it fits the first chunk.
func (w *capWriter) Bytes() []byte {
	if w.n == 0 {
		return nil
	}
	if len(w.chunks) == 0 {
		return w.cur
	}
	out := make([]byte, 0, w.n)
	for _, c := range w.chunks {
		out = append(out, c...)
	}
	out = append(out, w.cur...)
	w.chunks, w.cur = nil, nil
	return out
}
