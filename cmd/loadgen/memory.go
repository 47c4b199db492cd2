package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// deleteRun deletes run id through the host API.
func deleteRun(ctx context.Context, hostURL, hostToken, id string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, hostURL+"/host/v1/runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+hostToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("delete run: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("delete run: status %d", resp.StatusCode)
	}
	return nil
}

// memory is loadgen's --memory phase: the gateway's resident set while it
// answers calls whose loom prints a large payload. It reads VmRSS and
// VmHWM (the peak resident set since start) of the gateway process:
// idle, after 1, 10, half and all of c.memory sequential calls (each on
// a run of its own, deleted after it), then
// after c.memClients concurrent clients have made 3 calls each. The peak
// above idle bounds the heap the calls took, whatever the sampling would
// miss.
func memory(ctx context.Context, c config, tg *target, call func(context.Context, runToken) error, w io.Writer) error {
	if tg.pid <= 0 {
		return errors.New("--memory needs the gateway as a process (--gateway)")
	}
	idle, err := residentSet(tg.pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "loadgen --memory: gateway %s, payload %d bytes (page %v, numbers %v)\n", describe(c), c.payloadBytes, c.page, c.numbers)
	fmt.Fprintf(w, "  idle:                      VmRSS %6.1f MiB  VmHWM %6.1f MiB\n", mib(idle.rss), mib(idle.hwm))
	marks := map[int]bool{1: true, 10: true, c.memory / 2: true, c.memory: true}
	start := time.Now()
	var first memSet // after call 1
	for i := 1; i <= c.memory; i++ {
		// A run of its own for each call, deleted after it: what the
		// store keeps of a call (its record, its handles) goes with it,
		// so what is left is the gateway's own.
		r, err := createRun(ctx, tg.hostURL, tg.hostToken, fmt.Sprintf("mem-%d", i))
		if err != nil {
			return err
		}
		if err := call(ctx, r); err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		if err := deleteRun(ctx, tg.hostURL, tg.hostToken, r.id); err != nil {
			return err
		}
		if marks[i] {
			m, err := residentSet(tg.pid)
			if err != nil {
				return err
			}
			if i == 1 {
				first = m
			}
			fmt.Fprintf(w, "  after %4d sequential:     VmRSS %6.1f MiB  VmHWM %6.1f MiB  (%s a call)\n", i, mib(m.rss), mib(m.hwm), (time.Since(start) / time.Duration(i)).Round(time.Millisecond))
		}
	}
	seq, err := residentSet(tg.pid)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, c.memClients)
	for k := range c.memClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := call(ctx, tg.runs[1+k%(len(tg.runs)-1)]); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("concurrent calls: %w", err)
	}
	conc, err := residentSet(tg.pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  after %2d clients x 3 calls: VmRSS %6.1f MiB  VmHWM %6.1f MiB\n", c.memClients, mib(conc.rss), mib(conc.hwm))
	fmt.Fprintf(w, "\nsummary: sequential peak %.1f MiB above idle (target <= 8 MB of heap), RSS %+.1f MiB from call 1 to call %d; %d concurrent peak %.1f MiB (target < 256 MB)\n",
		mib(seq.hwm-idle.rss), mib(seq.rss-first.rss), c.memory, c.memClients, mib(conc.hwm))
	return nil
}

type memSet struct{ rss, hwm int64 }

// residentSet reads VmRSS and VmHWM, in bytes, from /proc/<pid>/status.
func residentSet(pid int) (memSet, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memSet{}, err
	}
	var m memSet
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
		switch string(f[0]) {
		case "VmRSS:":
			m.rss = kb << 10
		case "VmHWM:":
			m.hwm = kb << 10
		}
	}
	return m, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
