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
	"strings"
	"time"
)

// The bare server is the floor of the 10 KB comparison: the least any HTTP front of
// loom can cost on this machine. It is a separate process, as the gateway
// is, serving plain net/http with no middleware; for every POST it reads
// the body, runs the fake loom as execLoom does (same argv, empty
// environment, exec.Command(...).Output()) and answers its stdout as it
// is. It reads no token, validates nothing, measures nothing and logs
// nothing, so a gateway call costs at least what a bare call costs, and
// the gateway's own overhead is the difference between the two.

// serveBare runs the bare server for loomPath on a loopback port chosen by
// the kernel and prints "listening ADDR" on stdout. It returns only on
// error; the parent kills it.
func serveBare(loomPath string) error {
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
		cmd := exec.CommandContext(r.Context(), loomPath, searchArgv...)
		cmd.Env = []string{}
		out, err := cmd.Output()
		if err != nil {
			http.Error(w, "loom failed", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// startBare starts this program again as a bare server for loomPath and
// returns its base URL, its pid (for its CPU, /proc/<pid>/stat) and a
// function that stops it.
func startBare(ctx context.Context, loomPath string) (string, int, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(self, "--serve-bare", loomPath)
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
