package tests

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// wantFailure checks the failure of call record c and of its audit
// record: reason and detail exactly, a stderr tail ending with stderr (or
// none), and in the call record alone argv, exactly.
func wantFailure(t *testing.T, g *gateway, c client.CallRecord, reason, detail, stderr string, argv []string) {
	t.Helper()
	f := c.Failure
	if f == nil {
		t.Fatalf("call record without a failure: %+v", c)
	}
	if string(f.Reason) != reason || str(f.Detail) != detail {
		t.Errorf("call record failure %s %q, want %s %q", f.Reason, str(f.Detail), reason, detail)
	}
	tail := str(f.StderrTail)
	if len(tail) > stderrTailBytes+3 || !strings.HasSuffix(tail, stderr) || stderr == "" && tail != "" {
		t.Errorf("call record stderr tail %.200q (%d bytes), want one ending %.200q", tail, len(tail), stderr)
	}
	if f.Argv == nil || !slices.Equal(*f.Argv, argv) {
		t.Errorf("call record argv %v, want the argv loom was given, %q", f.Argv, argv)
	}
	var audit map[string]any
	testkit.Poll(10*time.Second, func() bool {
		for _, a := range g.logRecords(t, "audit") {
			if a["outputId"] == c.OutputId {
				audit = a
				return true
			}
		}
		return false
	})
	if audit == nil {
		t.Fatalf("no audit record of %s", c.OutputId)
	}
	af, _ := audit["failure"].(map[string]any)
	if af["reason"] != reason || af["detail"] != nilIfEmpty(detail) || af["stderrTail"] != nilIfEmpty(tail) {
		got, _ := af["stderrTail"].(string)
		t.Errorf("audit failure %v %q, stderrTail %.200q (equal: %v), want reason %s detail %q stderrTail %.200q", af["reason"], af["detail"], got, got == tail, reason, detail, tail)
	}
	if _, ok := af["argv"]; ok {
		t.Errorf("audit record holds argv: %v", af)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// str is *p, "" for nil.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
