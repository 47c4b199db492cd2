package tests

import (
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

func wantFailure(t *testing.T, g *gateway, c client.CallRecord, reason, detail, stderr string, argv bool) {
}
