package loomtest

import (
	"context"
	"errors"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom"
)

func TestClauses(t *testing.T) {
	out, err := Clauses(context.Background(), []string{"loom", "search", "A,B", "--json"}, nil)
	if want := `{"hits":[{"title":"t","ifc":{"confidentiality":["A","B"]}}]}`; err != nil || string(out.Stdout) != want {
		t.Errorf("Clauses = %s, %v; want %s", out.Stdout, err, want)
	}
}

func TestGateAndBlock(t *testing.T) {
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	close(release)
	if out, err := Gate(started, release)(context.Background(), nil, nil); err != nil {
		t.Errorf("Gate after release = %+v, %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Gate(started, make(chan struct{}))(ctx, nil, nil); !errors.Is(err, loom.ErrCancelled) {
		t.Errorf("Gate of an ended call = %v, want ErrCancelled", err)
	}
	<-started
	<-started
	if _, err := Block(started, Fail(loom.ErrCancelled))(ctx, nil, nil); !errors.Is(err, loom.ErrCancelled) {
		t.Errorf("Block of an ended call = %v, want what afterCancel answers", err)
	}
}
