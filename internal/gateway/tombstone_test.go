package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/problem"
)

// TestAuthenticateEnded: a deleted run's token answers run_ended on its
// run's path and outside any run's; on another run's path, 401.
func TestAuthenticateEnded(t *testing.T) {
	s, _, tok := newCore(t, nil)
	other := "other"
	hour := time.Hour
	if _, err := s.CreateRun(context.Background(), RunSpec{ID: &other, TTL: &hour}); err != nil {
		t.Fatal(err)
	}
	ended := "ended"
	c, err := s.CreateRun(context.Background(), RunSpec{ID: &ended, TTL: &hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(context.Background(), ended); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, run, token string
		want             problem.Code
	}{
		{"its run", "ended", c.Token, problem.RunEnded},
		{"no run", "", c.Token, problem.RunEnded},
		{"another run", "other", c.Token, problem.Unauthorized},
		{"a live token", "r", tok, ""},
		{"a stranger", "ended", "x" + c.Token, problem.Unauthorized},
	} {
		_, err := s.Authenticate(context.Background(), tt.run, tt.token)
		if got := CodeOf(err); err != nil && got != tt.want || err == nil && tt.want != "" {
			t.Errorf("%s: %v (%s), want %s", tt.name, err, got, tt.want)
		}
	}
}
