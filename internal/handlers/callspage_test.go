package handlers

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/store"
)

// callsPage is GET /host/v1/runs/{runId}/calls as a client reads it.
type callsPage struct {
	Calls []struct {
		OutputID string `json:"outputId"`
	} `json:"calls"`
	Total *int `json:"total"`
	Next  *int `json:"next"`
}

func (p callsPage) ids() []string {
	ids := []string{}
	for _, c := range p.Calls {
		ids = append(ids, c.OutputID)
	}
	return ids
}

// TestListCallsPaging: after skips the log's first records, limit caps the
// page, total is the log's length and next, the following page's after,
// is present only while records remain past the page.
func TestListCallsPaging(t *testing.T) {
	g := newTestGateway(t, gatewayOptions{})
	id, _ := g.createRun(t, `{"runId":"paged"}`)
	var all []string
	for i := range 5 {
		c := store.Call{OutputID: fmt.Sprintf("paged:loom_search:%d", i+1), Tool: "loom_search", Status: "ok", StartedAt: testStart}
		if err := g.store.AppendCall(context.Background(), id, c); err != nil {
			t.Fatalf("AppendCall: %v", err)
		}
		all = append(all, c.OutputID)
	}
	g.createRun(t, `{"runId":"empty"}`)

	tests := []struct {
		name  string
		run   string
		query string
		want  []string
		total int
		next  *int
	}{
		{name: "unpaged", run: "paged", query: "", want: all, total: 5},
		{name: "after 0", run: "paged", query: "?after=0", want: all, total: 5},
		{name: "after", run: "paged", query: "?after=2", want: all[2:], total: 5},
		{name: "limit", run: "paged", query: "?limit=2", want: all[:2], total: 5, next: ptr(2)},
		{name: "after and limit", run: "paged", query: "?after=2&limit=2", want: all[2:4], total: 5, next: ptr(4)},
		{name: "last page", run: "paged", query: "?after=4&limit=2", want: all[4:], total: 5},
		{name: "limit to the end", run: "paged", query: "?after=3&limit=2", want: all[3:], total: 5},
		{name: "after the end", run: "paged", query: "?after=5", want: []string{}, total: 5},
		{name: "far past the end", run: "paged", query: "?after=1000000&limit=1000", want: []string{}, total: 5},
		{name: "after the largest int64", run: "paged", query: "?after=9223372036854775807&limit=1000", want: []string{}, total: 5},
		{name: "limit max", run: "paged", query: "?limit=1000", want: all, total: 5},
		{name: "empty log", run: "empty", query: "?after=0&limit=1", want: []string{}, total: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := g.hostDo(http.MethodGet, "/host/v1/runs/"+tt.run+"/calls"+tt.query, "")
			wantStatus(t, rec, http.StatusOK)
			var p callsPage
			decode(t, rec, &p)
			if diff := cmp.Diff(tt.want, p.ids()); diff != "" {
				t.Errorf("GET calls%s ids mismatch (-want +got):\n%s", tt.query, diff)
			}
			if diff := cmp.Diff(&tt.total, p.Total); diff != "" {
				t.Errorf("GET calls%s total mismatch (-want +got):\n%s", tt.query, diff)
			}
			if diff := cmp.Diff(tt.next, p.Next); diff != "" {
				t.Errorf("GET calls%s next mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}

	// Following next from the first page reads the whole log once.
	var got []string
	for q := "?limit=2"; ; {
		var p callsPage
		decode(t, g.hostDo(http.MethodGet, "/host/v1/runs/paged/calls"+q, ""), &p)
		got = append(got, p.ids()...)
		if p.Next == nil {
			break
		}
		q = fmt.Sprintf("?after=%d&limit=2", *p.Next)
	}
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("paging through the log (-want +got):\n%s", diff)
	}
}

// TestListCallsPagingRefusals: values outside the contract answer
// invalid_input naming the parameter, and a missing run run_not_found
// whatever the page.
func TestListCallsPagingRefusals(t *testing.T) {
	g := newTestGateway(t, gatewayOptions{})
	g.createRun(t, `{"runId":"r"}`)
	tests := []struct {
		name, query, pointer string
	}{
		{name: "negative after", query: "?after=-1", pointer: "after"},
		{name: "after not a number", query: "?after=x", pointer: "after"},
		{name: "after fractional", query: "?after=1.5", pointer: "after"},
		{name: "after empty", query: "?after=", pointer: "after"},
		{name: "after past int64", query: "?after=99999999999999999999", pointer: "after"},
		{name: "limit zero", query: "?limit=0", pointer: "limit"},
		{name: "limit over the maximum", query: "?limit=1001", pointer: "limit"},
		{name: "limit negative", query: "?after=0&limit=-5", pointer: "limit"},
		{name: "limit not a number", query: "?limit=ten", pointer: "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, g.hostDo(http.MethodGet, "/host/v1/runs/r/calls"+tt.query, ""), http.StatusBadRequest, "invalid_input")
			if p.Pointer != tt.pointer {
				t.Errorf("pointer = %q, want %q", p.Pointer, tt.pointer)
			}
		})
	}
	wantProblem(t, g.hostDo(http.MethodGet, "/host/v1/runs/gone/calls?after=0&limit=10", ""), http.StatusNotFound, "run_not_found")
}
