package tests

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/api/client"
)

// TestCallLogPaging pages through a run's call log over the real binary:
// following next with limit 3 reads the whole log once, in order, and
// equals the unpaged answer; after=<count held> reads only the calls made
// since; after past the end is an empty page; a limit past 1000 answers
// invalid_input naming the parameter. Every answer is checked
// against the contract by the e2e client.
func TestCallLogPaging(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":1}]}`})
	r := g.newRun(t, client.CreateRunInput{})
	host := g.hostClient(t)
	for range 7 {
		r.ok(t, "loom_search", `{"query":"q"}`)
	}
	ids := func(cs []client.CallRecord) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.OutputId)
		}
		return out
	}
	page := func(after, limit *int) client.CallList {
		t.Helper()
		resp, err := host.ListCallsWithResponse(ctx(t), r.ID, &client.ListCallsParams{After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusOK || resp.JSON200 == nil {
			t.Fatalf("list calls after %v limit %v: %d %s", after, limit, resp.StatusCode(), resp.Body)
		}
		return *resp.JSON200
	}

	all := ids(r.calls(t))
	var want []string
	for n := 1; n <= 7; n++ {
		want = append(want, fmt.Sprintf("%s:loom_search:%d", r.ID, n))
	}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Fatalf("unpaged call log (-want +got):\n%s", diff)
	}

	var got []string
	var nexts []int
	for after := (*int)(nil); ; {
		p := page(after, ptr(3))
		if p.Total == nil || *p.Total != 7 {
			t.Errorf("total = %v, want 7", p.Total)
		}
		got = append(got, ids(p.Calls)...)
		if p.Next == nil {
			break
		}
		nexts = append(nexts, *p.Next)
		after = p.Next
	}
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("paged call log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3, 6}, nexts); diff != "" {
		t.Errorf("next values (-want +got):\n%s", diff)
	}

	// A client holding 7 calls asks only for the new ones.
	r.ok(t, "loom_search", `{"query":"q"}`)
	p := page(ptr(7), nil)
	if diff := cmp.Diff([]string{r.ID + ":loom_search:8"}, ids(p.Calls)); diff != "" {
		t.Errorf("calls after 7 (-want +got):\n%s", diff)
	}
	if p.Next != nil || p.Total == nil || *p.Total != 8 {
		t.Errorf("after 7: next = %v, total = %v, want none, 8", p.Next, p.Total)
	}
	if p := page(ptr(8), ptr(1000)); len(p.Calls) != 0 || p.Next != nil {
		t.Errorf("after the end: %d calls, next %v, want none", len(p.Calls), p.Next)
	}

	// One refusal end to end; every value outside the contract is in
	// the handlers' TestListCallsPagingRefusals.
	resp, err := host.ListCallsWithResponse(ctx(t), r.ID, &client.ListCallsParams{Limit: ptr(1001)})
	if err != nil {
		t.Fatal(err)
	}
	wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusBadRequest, "invalid_input", "limit")
}
