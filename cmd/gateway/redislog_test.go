package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// TestRedisLogPrefix: go-redis's messages reach the log with one "redis: "
// prefix, whether or not go-redis wrote one.
func TestRedisLogPrefix(t *testing.T) {
	tests := []struct{ format, want string }{
		{"redis: connection pool: failed to dial after %d attempts", "redis: connection pool: failed to dial after 5 attempts"},
		{"discarding bad PubSub connection: %v", "redis: discarding bad PubSub connection: 5"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		redisLog{slog.New(slog.NewJSONHandler(&buf, nil))}.Printf(context.Background(), tc.format, 5)
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", buf.Bytes(), err)
		}
		if rec.Msg != tc.want || rec.Level != "WARN" {
			t.Errorf("Printf(%q) logged %s %q, want WARN %q", tc.format, rec.Level, rec.Msg, tc.want)
		}
	}
}
