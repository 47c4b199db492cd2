package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// The bare server is the floor of the 10 KB comparison: the least any HTTP front of
// loom can cost on this machine. It is a separate process, as the gateway
// is, serving plain net/http with no middleware; for every POST it reads
// the body, runs the fake loom as execLoom does (same argv, empty
// environment, exec.Command(...).Output()) and answers its stdout as it
// is. It reads no token, validates nothing, measures nothing and logs
// nothing, so a gateway call costs at least what a bare call costs, and
// the gateway's own overhead is the difference between the two.

// The contained bare server (--serve-bare with --bare-contained) is the
// same, but starts loom as the gateway does: under the inline init, in a
// PID namespace and a mount namespace with a /proc of its own
// (loom.Contain's choice on this machine, which must be inline), from the
// request's goroutine, not locked to its thread, as package loom does.
// Its stdin and stderr are
// the null device, as the bare server's are; stdout is a pipe read whole.
// It is the floor of the gateway's process CPU once loom is contained:
// what any front pays that starts loom in those namespaces, with nothing
// of the gateway's own (no stderr tail, no deadline, no measuring).

// serveBare runs the bare server for loomPath (contained: the contained
// bare server) on a loopback port chosen by the kernel and prints
// "listening ADDR" on stdout. It returns only on error; the parent kills
// it.
func serveBare(loomPath string, contained bool) error {
	run := func(r *http.Request) ([]byte, error) {
		cmd := exec.CommandContext(r.Context(), loomPath, searchArgv...)
		cmd.Env = []string{}
		return cmd.Output()
	}
	if contained {
		c, err := loom.Contain("")
		if err != nil || !c.Inline {
			return fmt.Errorf("no inline containment here (%s): %v", c, err)
		}
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		argv := append([]string{loomPath}, searchArgv...)
		run = func(*http.Request) ([]byte, error) { return runContained(c, argv, null) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		out, err := run(r)
		if err != nil {
			http.Error(w, "loom failed", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// runContained runs argv under c's inline init with stdin and stderr
// null and returns its stdout, an error when it did not exit 0. Its
// goroutine is not locked to its thread, as package loom's is not: no
// goroutine of this program ends a thread, so the one that ran the clone
// (the init's parent-death signal is tied to it) outlives the command.
func runContained(c loom.Containment, argv []string, null *os.File) ([]byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	p, err := nsinit.StartInlineProc(argv, []string{}, null, pw, null, c.UserNS, c.Proc)
	pw.Close()
	if err != nil {
		return nil, err
	}
	out, rerr := io.ReadAll(pr)
	rep, err := p.Reap()
	switch {
	case err != nil:
		return nil, err
	case rerr != nil:
		return nil, rerr
	case rep.State != nsinit.Exited || syscall.WaitStatus(rep.Value).ExitStatus() != 0:
		return nil, fmt.Errorf("loom ended: state %d, status %#x", rep.State, rep.Value)
	}
	return out, nil
}

// startBare starts this program again as a bare server for loomPath (the
// contained one with contained) and returns its base URL, its pid (for
// its CPU, /proc/<pid>/stat) and a function that stops it.
func startBare(ctx context.Context, loomPath string, contained bool) (string, int, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self, "--serve-bare", loomPath, "--bare-contained="+strconv.FormatBool(contained))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			stop()
			return "", 0, nil, errors.New("bare server: no address")
		}
		return "http://" + addr, cmd.Process.Pid, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", 0, nil, errors.New("bare server: no address within 30s")
	case <-ctx.Done():
		stop()
		return "", 0, nil, ctx.Err()
	}
}

// bareCall is one call to the bare server, shaped as a loom_search call
// to the gateway; it checks that loom's payload came back.
func bareCall(ctx context.Context, client *http.Client, bareURL string) error {
	return postSearch(ctx, client, bareURL+"/v1/runs/bare/loom_search", "bare", `"hits":[{`)
}
