package loom

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestExplain: the failure of each verdict Decide and the shape check
// give, from what Condense read of stdout.
func TestExplain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool   Tool
		stdout string
		exit   int
		reason Reason
		detail string
	}{
		{Search, `{"hits":[]}`, 3, ReasonExitStatus, "exit status 3"},
		{Search, "", 2, ReasonNotJSON, "stdout is empty; exit status 2"},
		{Search, "", 0, ReasonNotJSON, "stdout is empty"},
		{Search, "  \n", 0, ReasonNotJSON, "stdout is not JSON at byte 3"},
		{Search, "hello", 0, ReasonNotJSON, "stdout is not JSON at byte 0"},
		{Search, `{"hits":[]} and more`, 0, ReasonNotJSON, "stdout is not JSON at byte 12"},
		{Search, `{"hits":[{"id":1}`, 0, ReasonNotJSON, "stdout is not JSON at byte 17"},
		{Search, "{\"hits\":[]}\n{\"hits\":[]}\n", 0, ReasonNotJSON, "stdout is not JSON at byte 12"},
		{Search, `{"hits":{}}`, 0, ReasonShape, "hits is not an array"},
		{Search, `{"results":[]}`, 0, ReasonShape, "hits is missing"},
		{Search, `[]`, 0, ReasonShape, "the payload is not an object"},
		{PageDiscover, `{"pages":1}`, 0, ReasonShape, "pages is not an array"},
		{CalendarList, `{"events":[]}`, 0, ReasonShape, "the payload is not an array"},
		{CalendarList, `"x"`, 0, ReasonShape, "the payload is not an array"},
		{PageRead, `[{"path":"a"}]`, 0, ReasonShape, "the payload is not an object"},
		{Search, `{"schemaVersion":2,"hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is 2, not 1"},
		{Search, `{"schemaVersion":"1","hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is a string, not 1"},
		{Search, `{"schemaVersion":null,"hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is null, not 1"},
		{Search, `{"schemaVersion":{"v":2},"hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is an object, not 1"},
		{Search, `{"schemaVersion":1.5e0,"hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is 1.5e0, not 1"},
		{Search, `{"schemaVersion":1` + strings.Repeat("0", 40) + `,"hits":[]}`, 0, ReasonSchemaVersion, "schemaVersion is a long number, not 1"},
		{Search, `{"` + strings.Repeat("n", maxNameBytes+1) + `":1,"hits":[]}`, 0, ReasonPayloadBound, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.tool)+" "+tt.stdout[:min(len(tt.stdout), 30)], func(t *testing.T) {
			kept := Condense(tt.tool, bytes.NewReader([]byte(tt.stdout)))
			defer kept.Release()
			var err error
			switch {
			case kept.Refused:
				err = ErrMalformedPayload
			default:
				err = Decide(tt.tool, false, kept.Payload != nil, tt.exit, kept.Facts)
				if err == nil && !kept.Shaped {
					err = ErrMalformedPayload
				}
			}
			f := Explain(tt.tool, err, Output{ExitCode: tt.exit, Condensed: kept})
			if f == nil {
				t.Fatalf("Explain(%v) = nil", err)
			}
			if f.Reason != tt.reason || tt.detail != "" && f.Detail != tt.detail {
				t.Errorf("Explain = %s %q, want %s %q", f.Reason, f.Detail, tt.reason, tt.detail)
			}
			if !errors.Is(f, err) || f.Error() != err.Error() {
				t.Errorf("the failure does not carry the verdict %v", err)
			}
		})
	}
	if f := Explain(Search, ErrCancelled, Output{}); f != nil {
		t.Errorf("Explain(ErrCancelled) = %+v, want nil: the gateway's own", f)
	}
}

// TestStderrText: the tail is cut at a rune, marked when cut, and holds
// no control character but newline and tab, no bidi override, only
// valid UTF-8.
func TestStderrText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stderr string
		cut    bool
		want   string
	}{
		{"", false, ""},
		{"plain\nline\ttab\n", false, "plain\nline\ttab\n"},
		{"\x1b[31mred\x1b[0m\r\n", false, "\ufffd[31mred\ufffd[0m\ufffd\n"},
		{"a\xffb\u0085c\u202edef\u2066", false, "a\ufffdb\ufffdc\ufffddef\ufffd"},
		{"\x80\x80tail", true, "…tail"},
		{"é tail"[1:], true, "… tail"},
	}
	for _, tt := range tests {
		if got := StderrText(Output{Stderr: []byte(tt.stderr), StderrCut: tt.cut}); got != tt.want {
			t.Errorf("StderrText(%q, %v) = %q, want %q", tt.stderr, tt.cut, got, tt.want)
		}
	}
	// A tail of control characters, each three bytes once replaced, is
	// cut back to MaxStderrTail bytes after the "…".
	ctl := bytes.Repeat([]byte{0x01}, MaxStderrTail-1)
	got := StderrText(Output{Stderr: append(ctl, 'z'), StderrCut: true})
	if !strings.HasPrefix(got, "…\ufffd") || !strings.HasSuffix(got, "\ufffdz") || len(got) > MaxStderrTail+len("…") {
		t.Errorf("a tail of control characters: %d bytes, %q…%q", len(got), got[:9], got[len(got)-4:])
	}
}

// TestTail: the tail keeps the last MaxStderrTail bytes, whatever the
// sizes of the writes.
func TestTail(t *testing.T) {
	t.Parallel()
	var all []byte
	var tl tail
	for i, n := range []int{1, 100, 3000, 7, MaxStderrTail, 2*MaxStderrTail + 5, 1, 1} {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		all = append(all, p...)
		tl.Write(p)
		got, cut := tl.bytes()
		want := all[max(0, len(all)-MaxStderrTail):]
		if !bytes.Equal(got, want) || cut != (len(all) > MaxStderrTail) {
			t.Fatalf("after %d bytes: tail of %d (cut %v), want the last %d", len(all), len(got), cut, len(want))
		}
	}
	var empty tail
	if b, cut := empty.bytes(); b != nil || cut {
		t.Errorf("empty tail = %q %v", b, cut)
	}
}
