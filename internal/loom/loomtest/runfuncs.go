package loomtest

import (
	"context"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
)

// Block returns a RunFunc that sends on started when a call starts, then
// waits for the call's context, as loom.CLI does with a process it kills,
// and answers with afterCancel. A call still waiting after 10s answers
// loom.ErrTimeout, so that no test hangs on it.
func Block(started chan<- struct{}, afterCancel func(ctx context.Context, argv, env []string) (loomref.Output, error)) func(context.Context, []string, []string) (loomref.Output, error) {
	return func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			return loomref.Output{}, loom.ErrTimeout
		}
		return afterCancel(ctx, argv, env)
	}
}

// Gate returns a RunFunc that sends on started when a call starts, then
// answers as Sample once release is closed, or loom.ErrCancelled when the
// call's context ends first.
func Gate(started chan<- struct{}, release <-chan struct{}) func(context.Context, []string, []string) (loomref.Output, error) {
	return func(ctx context.Context, argv, env []string) (loomref.Output, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return loomref.Output{ExitCode: -1}, loom.ErrCancelled
		}
		return Sample(ctx, argv, env)
	}
}

// Clauses is a RunFunc that answers a search with one row whose
// confidentiality is the clauses its query names, comma-separated
// ("A,B": ["A","B"]).
func Clauses(_ context.Context, argv, _ []string) (loomref.Output, error) {
	q := ""
	for i, a := range argv {
		if a == "search" && i+1 < len(argv) {
			q = argv[i+1]
			break
		}
	}
	var clauses []string
	for _, c := range strings.Split(q, ",") {
		clauses = append(clauses, `"`+c+`"`)
	}
	row := `{"title":"t","ifc":{"confidentiality":[` + strings.Join(clauses, ",") + `]}}`
	return loomref.Output{Stdout: []byte(`{"hits":[` + row + `]}`)}, nil
}
