package loom

// The stdout reader of Run against the plain one it replaced (a
// bytes.Buffer behind Write), on random write patterns and limits.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// plainCapWriter is the plain form of capWriter, the reference
// TestCapWriterMatchesPlain holds it to.
type plainCapWriter struct {
	buf      bytes.Buffer
	limit    int64
	exceeded bool
	onLimit  func()
}

func (w *plainCapWriter) Write(p []byte) (int, error) {
	if w.exceeded {
		return 0, ErrStdoutLimit
	}
	if int64(w.buf.Len())+int64(len(p)) > w.limit {
		w.exceeded = true
		w.onLimit()
		return 0, ErrStdoutLimit
	}
	return w.buf.Write(p)
}

// pieces is a reader that returns its data in the given piece sizes.
type pieces struct {
	data  []byte
	sizes []int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := len(p.data)
	if len(p.sizes) > 0 {
		n, p.sizes = min(n, p.sizes[0]), p.sizes[1:]
	}
	n = copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

func TestCapWriterMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	pattern := make([]byte, 4099)
	for j := range pattern {
		pattern[j] = byte(rng.Uint32())
	}
	n := 1000
	if raceEnabled {
		n = 200
	}
	for i := range n {
		size := rng.IntN(1 << uint(rng.IntN(22)))
		data := make([]byte, size)
		for j := 0; j < size; j += len(pattern) {
			copy(data[j:], pattern[rng.IntN(64):])
		}
		limit := int64(size + rng.IntN(3) - 1)
		if rng.IntN(4) == 0 {
			limit = int64(rng.IntN(size + 1))
		}
		limit = max(limit, 1)
		var sizes []int
		for range rng.IntN(50) {
			sizes = append(sizes, 1+rng.IntN(1<<uint(rng.IntN(20))))
		}
		fastCalls, plainCalls := 0, 0
		fast := &capWriter{limit: limit, onLimit: func() { fastCalls++ }}
		plain := &plainCapWriter{limit: limit, onLimit: func() { plainCalls++ }}
		var ferr, perr error
		if i%2 == 0 { // the way exec feeds it: io.Copy, which takes ReadFrom
			_, ferr = io.Copy(fast, &pieces{data, sizes})
		} else {
			_, ferr = io.Copy(struct{ io.Writer }{fast}, &pieces{data, sizes})
		}
		_, perr = io.Copy(struct{ io.Writer }{plain}, &pieces{data, sizes})
		if !errors.Is(ferr, perr) && (ferr != nil || perr != nil) || fast.exceeded != plain.exceeded || fastCalls != plainCalls || fastCalls > 1 {
			t.Fatalf("size %d limit %d: fast %v %v %d, plain %v %v %d", size, limit, ferr, fast.exceeded, fastCalls, perr, plain.exceeded, plainCalls)
		}
		if !fast.exceeded {
			got, want := fast.Bytes(), plain.buf.Bytes()
			if !bytes.Equal(got, want) || (got == nil) != (len(want) == 0) {
				t.Fatalf("size %d limit %d: kept %d bytes, plain %d", size, limit, len(got), len(want))
			}
			if len(got) > firstChunk && cap(got) != len(got) {
				t.Fatalf("size %d: kept in %d bytes", len(got), cap(got))
			}
		}
	}
}

// BenchmarkRunVsExec interleaves loom.CLI.Run and a bare os/exec run
// (exec.Command(...).Output()) of the same fake loom printing 10 KB, and
// reports the p50 of each and their ratio: what Run's process handling
// (own process group, timeout, stdout cap, group kill after exit) adds.
//
//	go test ./internal/loom -run '^$' -bench RunVsExec -benchtime 300x -count 3
func BenchmarkRunVsExec(b *testing.B) {
	payload := strings.Repeat(`{"id":"mail:000001","snippet":"atlas launch"},`, 220)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	argv, env := []string{exe, payload, "0"}, []string{fakeModeVar + "=print"}
	cli := New(Options{})
	var run, bare []time.Duration
	for b.Loop() {
		t0 := time.Now()
		out, err := cli.Run(context.Background(), argv, env)
		t1 := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		raw, xerr := cmd.Output()
		t2 := time.Now()
		if err != nil || xerr != nil || len(out.Stdout) != len(payload) || len(raw) != len(payload) {
			b.Fatal(err, xerr)
		}
		run, bare = append(run, t1.Sub(t0)), append(bare, t2.Sub(t1))
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(float64(p50(run).Microseconds()), "run-p50-µs")
	b.ReportMetric(float64(p50(bare).Microseconds()), "exec-p50-µs")
	b.ReportMetric(float64(p50(run))/float64(p50(bare)), "run/exec")
}
