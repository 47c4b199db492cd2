package loomtest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
)

func TestFake(t *testing.T) {
	cfg := &loom.Config{CLIPath: "/opt/loom/bin/loom", Transport: loom.Transport{Kind: loom.TransportBroker, QueuePath: "/q"}}
	inv, err := loom.BuildArgv(cfg, loom.People, []byte(`{"query":"ada@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	argv := inv.Argv
	env := loom.Env(cfg, "/bin", true)

	f := &Fake{RunFunc: Sample}
	out, err := f.Run(context.Background(), argv, env)
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	if _, err := loomref.Interpret(loom.People, true, out); err != nil {
		t.Errorf("Interpret(sample output) = %v", err)
	}
	if diff := cmp.Diff([]Call{{Argv: argv, Env: env}}, f.Calls()); diff != "" {
		t.Errorf("Calls mismatch (-want +got):\n%s", diff)
	}

	var zero Fake
	if out, err := zero.Run(context.Background(), argv, env); err != nil || string(out.Stdout) != "{}" {
		t.Errorf("zero Fake Run = %q, %v", out.Stdout, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := zero.Run(ctx, argv, env); !errors.Is(err, loom.ErrCancelled) {
		t.Errorf("Run with a done context = %v", err)
	}
	if _, err := (&Fake{RunFunc: Fail(loom.ErrBusy)}).Run(context.Background(), argv, env); !errors.Is(err, loom.ErrBusy) {
		t.Errorf("Fail(ErrBusy) = %v", err)
	}
	if out, _ := (&Fake{RunFunc: Reply("x", 3)}).Run(context.Background(), argv, env); string(out.Stdout) != "x" || out.ExitCode != 3 {
		t.Errorf("Reply = %+v", out)
	}
}
