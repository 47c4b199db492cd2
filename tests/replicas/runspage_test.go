package replicas

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// TestRunsPagedShared: on a store shared by replicas the run list pages
// through runs whichever replica created them. Runs created through A and
// B in turn, read through A in pages of 4 by following nextCursor, are
// each listed once, in creation order; one deleted through B before its
// page is read is left out. (The store may hold other tests' runs too:
// only this test's are checked.)
func TestRunsPagedShared(t *testing.T) { eachStore(t, testRunsPagedShared) }

func testRunsPagedShared(t *testing.T, storeURL string) {
	e := setUp(t)
	a := e.start(t, "replica A", storeURL)
	b := e.start(t, "replica B", storeURL)
	tag := testkit.RandomHex(4)
	var created []string
	for i := range 13 {
		r := []*replica{a, b}[i%2]
		id := fmt.Sprintf("page-%s-%02d", tag, i)
		status, body := do(t, "POST", r.host+"/host/v1/runs", e.hostToken, map[string]any{"runId": id, "ttlSeconds": 600})
		expect(t, r.name+": create run", status, body, http.StatusCreated, nil)
		created = append(created, id)
		t.Cleanup(func() { do(t, "DELETE", a.host+"/host/v1/runs/"+id, e.hostToken, nil) })
	}
	var listed []string
	cursor := ""
	for page := 0; page < 10000; page++ {
		q := "?limit=4"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if page == 1 {
			status, body := do(t, "DELETE", b.host+"/host/v1/runs/"+created[12], e.hostToken, nil)
			expect(t, "B: delete the last run", status, body, http.StatusNoContent, nil)
		}
		status, body := do(t, "GET", a.host+"/host/v1/runs"+q, e.hostToken, nil)
		var list struct {
			Runs       []struct{ RunID string }
			NextCursor *string
		}
		expect(t, "A: runs page", status, body, http.StatusOK, &list)
		if len(list.Runs) > 4 {
			t.Fatalf("page of %d runs, want at most 4", len(list.Runs))
		}
		for _, r := range list.Runs {
			if slices.Contains(created, r.RunID) {
				listed = append(listed, r.RunID)
			}
		}
		if list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	if want := created[:12]; !slices.Equal(listed, want) {
		t.Errorf("this test's runs through the cursors:\n%v\nwant:\n%v", listed, want)
	}
}
