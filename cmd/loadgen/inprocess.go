package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/handlers"
	"github.com/loom-gateway/gateway/internal/loom"
)

// startInProcess serves the gateway's agent and host handlers, wired as
// cmd/gateway wires them (memory store, loom.CLI runner, contract
// validation, JSON request and audit logs at info level, here discarded),
// from this process on loopback ports, and profiles this process's CPU
// into profilePath and traces it into tracePath (each when not empty)
// until stop. It exists only for --cpuprofile and --trace: the gateway
// binary itself has no profiling switch.
//
// With a non-nil runner (--own-cost) the handlers call it instead of
// starting loom, and profilePath may be empty.
func startInProcess(ctx context.Context, dir, loomPath string, runs int, profilePath, tracePath string, runner gateway.Runner) (*target, error) {
	cfgPath, err := writeConfig(dir, loomPath)
	if err != nil {
		return nil, err
	}
	cfg, err := loom.LoadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	const hostToken = "loadgen-host-token-0123456789abcdef"
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := inProcessStore()
	if err != nil {
		return nil, err
	}
	gc := gateway.Config{
		Store:            st,
		Loom:             cfg,
		LoomPath:         cfg.CLIPath,
		Env:              loom.Env(cfg, "/usr/bin:/bin", true),
		Runner:           loom.New(loom.Options{Timeout: 30 * time.Second, MaxConcurrent: 2 * runs}),
		Tools:            loom.Tools,
		MaxHandlesPerRun: 100000,
		MaxCallsPerRun:   0, // one run per client for the whole burst: no cap
		RunTTL:           time.Hour,
		Logger:           logger,
	}
	if runner != nil {
		gc.Runner = runner
	}
	fs, err := handlers.New(handlers.Config{Core: gc, MaxRequestBytes: 1 << 20, HostToken: hostToken})
	if err != nil {
		return nil, err
	}
	agentLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		agentLn.Close()
		return nil, err
	}
	agentSrv := &http.Server{Handler: fs.Agent, ReadHeaderTimeout: 10 * time.Second}
	hostSrv := &http.Server{Handler: fs.Host, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = agentSrv.Serve(agentLn) }()
	go func() { _ = hostSrv.Serve(hostLn) }()

	var f, tf *os.File
	if profilePath != "" {
		if f, err = os.Create(profilePath); err != nil {
			return nil, err
		}
	}
	if tracePath != "" {
		if tf, err = os.Create(tracePath); err != nil {
			return nil, err
		}
	}
	stop := func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
		if tf != nil {
			trace.Stop()
			tf.Close()
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = errors.Join(agentSrv.Shutdown(sctx), hostSrv.Shutdown(sctx))
	}
	tg := &target{agentURL: "http://" + agentLn.Addr().String(), stop: stop}
	for i := range runs {
		r, err := createRun(ctx, "http://"+hostLn.Addr().String(), hostToken, fmt.Sprintf("load-%d", i))
		if err != nil {
			stop()
			return nil, err
		}
		tg.runs = append(tg.runs, r)
	}
	if f != nil {
		if err := pprof.StartCPUProfile(f); err != nil {
			stop()
			return nil, err
		}
	}
	if tf != nil {
		if err := trace.Start(tf); err != nil {
			stop()
			return nil, err
		}
	}
	return tg, nil
}

// fixedRunner answers every call with the same stdout, as if loom ran in
// no time.
type fixedRunner struct{ stdout []byte }

func (r fixedRunner) RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error) {
	return loom.Output{Condensed: loom.Condense(tool, bytes.NewReader(r.stdout))}, nil
}
