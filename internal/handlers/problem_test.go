package handlers

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/result"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

func TestToProblem(t *testing.T) {
	t.Parallel()
	// want is what toProblem must return besides the per-code text.
	type want struct {
		Status     int
		Code       string
		OutputID   string
		HostCode   string
		Pointer    string
		Choices    []string
		RetryAfter int
	}
	tests := []struct {
		name string
		err  error
		want want
	}{
		{"gateway input error", problem.Invalid("/runId", problem.PatternMismatch, "d"), want{Status: 400, Code: "invalid_input", Pointer: "/runId"}},
		{"gateway input error with choices", problem.Invalid("/tools/0", problem.NotInChoices, "d", "loom_search"),
			want{Status: 400, Code: "invalid_input", Pointer: "/tools/0", Choices: []string{"loom_search"}}},
		{"builder refusal", gateway.Classify(problem.Invalid("/kind", problem.NotInChoices, "d", "all", "project"), "r:loom_page_discover:3"),
			want{Status: 400, Code: "invalid_input", OutputID: "r:loom_page_discover:3", Pointer: "/kind", Choices: []string{"all", "project"}}},
		{"builder refusal of the whole input", &loom.InputError{Reason: loom.ReasonNotObject}, want{Status: 400, Code: "invalid_input"}},
		{"result value invalid", fmt.Errorf("write: %w", result.ErrInvalidValue), want{Status: 400, Code: "invalid_input"}},
		{"result value too deep", result.ErrTooDeep, want{Status: 400, Code: "invalid_input"}},
		{"unauthorized", errUnauthorized, want{Status: 401, Code: "unauthorized"}},
		{"run not found (handlers)", errRunNotFound, want{Status: 404, Code: "run_not_found"}},
		{"run not found (store)", fmt.Errorf("get: %w", store.ErrRunNotFound), want{Status: 404, Code: "run_not_found"}},
		{"route not found", errRouteNotFound, want{Status: 404, Code: "route_not_found"}},
		{"not configured", gateway.Classify(gateway.ErrNotConfigured, "r:loom_search:1"),
			want{Status: 404, Code: "not_configured", OutputID: "r:loom_search:1"}},
		{"result not found", gateway.ErrNoResult, want{Status: 404, Code: "result_not_found"}},
		{"person not found", gateway.Classify(loom.ErrNotFound, "r:loom_people:2"),
			want{Status: 404, Code: "not_found", OutputID: "r:loom_people:2"}},
		{"method not allowed", errMethodNotAllowed, want{Status: 405, Code: "method_not_allowed"}},
		{"request timeout", errRequestTimeout, want{Status: 408, Code: "request_timeout"}},
		{"run ended", gateway.Classify(&gateway.Error{Code: problem.RunEnded, Err: gateway.ErrRunEnded}, ""), want{Status: 410, Code: "run_ended"}},
		{"origin not allowed", errOriginNotAllowed, want{Status: 403, Code: "origin_not_allowed"}},
		{"host not allowed", errHostNotAllowed, want{Status: 421, Code: "host_not_allowed"}},
		{"person contested", loom.ErrContested, want{Status: 409, Code: "contested"}},
		{"run exists", store.ErrRunExists, want{Status: 409, Code: "run_exists"}},
		{"result exists", store.ErrResultExists, want{Status: 409, Code: "result_exists"}},
		{"handle limit", gateway.Classify(store.ErrHandleLimit, "r:loom_search:4"),
			want{Status: 409, Code: "handle_limit_reached", OutputID: "r:loom_search:4"}},
		{"call limit", gateway.ErrCallLimit, want{Status: 409, Code: "call_limit_reached"}},
		{"label limit", fmt.Errorf("observe: %w", store.ErrLabelLimit), want{Status: 409, Code: "label_limit_reached"}},
		{"label limit on a call", gateway.Classify(store.ErrLabelLimit, "r:loom_search:4"), want{Status: 409, Code: "label_limit_reached", OutputID: "r:loom_search:4"}},
		{"request too large", errRequestTooLarge, want{Status: 413, Code: "request_too_large"}},
		{"unsupported media type", errUnsupportedMedia, want{Status: 415, Code: "unsupported_media_type"}},
		{"unheld handle", fmt.Errorf("result: %w", result.ErrUnheldHandle), want{Status: 422, Code: "unheld_handle"}},
		{"busy", gateway.Classify(loom.ErrBusy, "r:loom_search:5"),
			want{Status: 429, Code: "busy", OutputID: "r:loom_search:5", RetryAfter: problem.RetryAfterSeconds}},
		{"run limit", store.ErrRunLimit, want{Status: 429, Code: "run_limit_reached"}},
		{"rate limited", gateway.Classify(&store.RateLimitError{RetryAfter: 2500 * time.Millisecond}, ""),
			want{Status: 429, Code: "rate_limited", RetryAfter: 3}},
		{"cancelled (handlers)", errCancelled, want{Status: 499, Code: "cancelled"}},
		{"cancelled (loom)", loom.ErrCancelled, want{Status: 499, Code: "cancelled"}},
		{"unknown error", errors.New("open /secret/path: permission denied"), want{Status: 500, Code: "internal_error"}},
		{"timeout", loom.ErrTimeout, want{Status: 502, Code: "command_failed"}},
		{"stdout limit", loom.ErrStdoutLimit, want{Status: 502, Code: "command_failed"}},
		{"start error", &loom.StartError{Err: errors.New("exec /secret/loom: no such file")}, want{Status: 502, Code: "command_failed"}},
		{"not JSON", loom.ErrNotJSON, want{Status: 502, Code: "command_failed"}},
		{"exit code", gateway.Classify(&loom.ExitError{Code: 2}, "r:loom_search:6"),
			want{Status: 502, Code: "command_failed", OutputID: "r:loom_search:6"}},
		{"host refused with code", gateway.Classify(&loom.HostRefusedError{HostCode: "rate_limited", HasHostCode: true}, "r:loom_search:7"),
			want{Status: 502, Code: "host_refused", OutputID: "r:loom_search:7", HostCode: "rate_limited"}},
		{"host refused without code", &loom.HostRefusedError{}, want{Status: 502, Code: "host_refused"}},
		{"host refused, code not a string", &loom.HostRefusedError{HostCode: "ignored", HasHostCode: false}, want{Status: 502, Code: "host_refused"}},
		{"schema version", loom.ErrSchemaVersion, want{Status: 502, Code: "schema_version_mismatch"}},
		{"malformed payload", loom.ErrMalformedPayload, want{Status: 502, Code: "malformed_payload"}},
		{"ceiling unavailable", gateway.Classify(&loom.CeilingUnavailableError{Reason: loom.ReasonRecordMissing}, "r:loom_search:8"),
			want{Status: 503, Code: "ceiling_unavailable", OutputID: "r:loom_search:8"}},
		{"store unavailable", fmt.Errorf("redis: %w", store.ErrStoreUnavailable), want{Status: 503, Code: "store_unavailable"}},
	}

	// Every code of the table has at least one row, and no row names a
	// code the table lacks.
	var tableCodes, rowCodes []string
	for _, c := range problem.Codes() {
		tableCodes = append(tableCodes, string(c))
	}
	for _, tt := range tests {
		if !slices.Contains(rowCodes, tt.want.Code) {
			rowCodes = append(rowCodes, tt.want.Code)
		}
	}
	slices.Sort(tableCodes)
	slices.Sort(rowCodes)
	if diff := cmp.Diff(tableCodes, rowCodes); diff != "" {
		t.Errorf("codes covered by the test differ from the codes table (-table +test):\n%s", diff)
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := toProblem(tt.err)
			got := want{
				Status: p.Status, Code: string(p.Code), OutputID: p.OutputID, HostCode: p.HostCode,
				Pointer: p.Pointer, Choices: p.Choices, RetryAfter: p.RetryAfter,
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("toProblem(%v) mismatch (-want +got):\n%s", tt.err, diff)
			}
			info := problem.Lookup(problem.Code(tt.want.Code))
			if p.Title != info.Title || p.Detail != info.Detail && len(p.Errors) == 0 || info.Status != tt.want.Status {
				t.Errorf("toProblem(%v) text = %q / %q (table status %d), want the table's %q / %q / %d",
					tt.err, p.Title, p.Detail, info.Status, info.Title, info.Detail, tt.want.Status)
			}
			if wantType := "https://loom-gateway.dev/problems/" + tt.want.Code; p.Type != wantType {
				t.Errorf("toProblem(%v).Type = %q, want %q", tt.err, p.Type, wantType)
			}
		})
	}
}

// TestWriteProblemHidesUnknownErrors renders an unclassified error: the
// client sees the fixed internal_error text and the request id; the error
// text goes to the log under the same id only.
func TestWriteProblemHidesUnknownErrors(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	const secret = "open /secret/path MARKER-stderr: permission denied"
	h := reqid.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, log, fmt.Errorf("handlers: %w", errors.New(secret)))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))

	p := wantProblem(t, rec, http.StatusInternalServerError, "internal_error")
	for _, leak := range []string{"MARKER", "/secret", "permission denied"} {
		if strings.Contains(rec.Body.String(), leak) {
			t.Errorf("body %s contains %q", rec.Body, leak)
		}
	}
	if got := logs.String(); !strings.Contains(got, secret) || !strings.Contains(got, p.RequestID) {
		t.Errorf("log %q does not hold the error and request id %s", got, p.RequestID)
	}
}

// TestWriteProblemRetryAfter: busy and rate_limited answers carry
// Retry-After (rate_limited: the bucket's wait in whole seconds, rounded
// up), others not.
func TestWriteProblemRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want string
	}{
		{loom.ErrBusy, "1"},
		{gateway.Classify(loom.ErrBusy, "r:loom_search:1"), "1"},
		{&store.RateLimitError{RetryAfter: time.Millisecond}, "1"},
		{gateway.Classify(&store.RateLimitError{RetryAfter: 61*time.Second + time.Millisecond}, ""), "62"},
		{loom.ErrTimeout, ""},
		{store.ErrRunLimit, ""},
	} {
		rec := httptest.NewRecorder()
		writeProblem(rec, httptest.NewRequest(http.MethodGet, "/", nil), slog.New(slog.DiscardHandler), tt.err)
		if got := rec.Header().Get("Retry-After"); got != tt.want {
			t.Errorf("writeProblem(%v): Retry-After = %q, want %q", tt.err, got, tt.want)
		}
	}
}
