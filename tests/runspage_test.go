package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/loom-gateway/gateway/api/client"
)

// runPage is GET /host/v1/runs with query, decoded.
func (g *gateway) runPage(t *testing.T, query string) (client.RunList, int, []byte) {
	t.Helper()
	resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs"+query, g.HostToken, "", nil)
	var list client.RunList
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("GET /host/v1/runs%s: %v: %.300s", query, err, body)
		}
	}
	return list, resp.StatusCode, body
}

// TestRunsPaged: the run list answers a page at a time. Without a limit a
// page holds 100 runs and names the next with nextCursor; following the
// cursors lists every run once, oldest first, and the last page has none;
// a run deleted before its page is read is left out; a cursor the gateway
// did not give, and a limit past 1,000, are invalid_input.
func TestRunsPaged(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{NoConfig: true})
	const n = 130
	var created []string
	for i := range n {
		created = append(created, g.newRun(t, client.CreateRunInput{RunId: ptr(fmt.Sprintf("page-%03d", i))}).ID)
	}

	first, status, body := g.runPage(t, "")
	if status != http.StatusOK || len(first.Runs) != 100 || first.NextCursor == nil {
		t.Fatalf("first page: %d, %d runs, nextCursor %v, want 100 and a cursor: %.300s", status, len(first.Runs), first.NextCursor, body)
	}
	whole, _, _ := g.runPage(t, "?limit=1000")
	if len(whole.Runs) != n || whole.NextCursor != nil {
		t.Errorf("?limit=1000: %d runs, nextCursor %v, want %d and none", len(whole.Runs), whole.NextCursor, n)
	}

	// Pages of 7, the run of the third page deleted before it is read.
	var listed []string
	cursor := ""
	for page := 0; ; page++ {
		q := "?limit=7"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if page == 2 {
			rawRequest(t, "DELETE", g.HostURL+"/host/v1/runs/page-014", g.HostToken, "", nil)
		}
		list, status, body := g.runPage(t, q)
		if status != http.StatusOK || len(list.Runs) > 7 {
			t.Fatalf("page %d: %d, %d runs: %.300s", page, status, len(list.Runs), body)
		}
		for _, r := range list.Runs {
			listed = append(listed, r.RunId)
		}
		if list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
		if page > n {
			t.Fatal("the pages do not end")
		}
	}
	want := append(append([]string{}, created[:14]...), created[15:]...)
	if fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Errorf("runs listed through the cursors:\n%v\nwant (all but the deleted page-014, in creation order):\n%v", listed, want)
	}

	for _, q := range []string{"?cursor=not-a-cursor", "?cursor=" + url.QueryEscape("bm90LWEtY3Vyc29y"), "?limit=1001", "?limit=0"} {
		resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs"+q, g.HostToken, "", nil)
		var p client.Problem
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &p) != nil || p.Code != "invalid_input" {
			t.Errorf("GET /host/v1/runs%s: %d %.300s, want 400 invalid_input", q, resp.StatusCode, body)
		}
	}
}
