package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// logSplit reads the gateway's own account of its last n loom_search calls
// from its JSON log (the audit record's durationMs and loomMs, the request
// record's durationMs, joined by requestId) and prints the p50 of each part
// of a call: the loom process, the gateway's work around it within the
// call (from the run's output number to the call record: ceiling, argv,
// Condense and Decide, measure, handles, call log), and the rest of the
// request (request id, auth, body checks, contract validation, the answer
// written, the logs). What a client sees beyond their sum is the HTTP
// round trip.
func logSplit(w io.Writer, who, logPath string, n int) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	type rec struct {
		Msg        string   `json:"msg"`
		RequestID  string   `json:"requestId"`
		Tool       string   `json:"tool"`
		Route      string   `json:"route"`
		DurationMs float64  `json:"durationMs"`
		LoomMs     *float64 `json:"loomMs"`
	}
	type call struct{ loom, call, request float64 }
	calls := map[string]*call{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r rec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.RequestID == "" {
			continue
		}
		c := calls[r.RequestID]
		switch {
		case r.Msg == "audit" && r.Tool == "loom_search" && r.LoomMs != nil:
			if c == nil {
				c = &call{}
				calls[r.RequestID] = c
			}
			c.loom, c.call = *r.LoomMs, r.DurationMs
		case r.Msg == "request" && r.Route == "/v1/runs/{runId}/loom_search" && c != nil:
			c.request = r.DurationMs
			order = append(order, r.RequestID)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) < n {
		return errors.New("fewer calls in the log than were made")
	}
	var loomT, around, rest, whole []time.Duration
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, id := range order[len(order)-n:] {
		c := calls[id]
		loomT = append(loomT, ms(c.loom))
		around = append(around, ms(c.call-c.loom))
		rest = append(rest, ms(c.request-c.call))
		whole = append(whole, ms(c.request))
	}
	fmt.Fprintf(w, "  in %s, from its log (p50 of each part of the same %d calls):\n", who, n)
	fmt.Fprintf(w, "    loom process %s, work around it in the call %s, rest of the request %s, whole request %s\n",
		stats(loomT).p50, stats(around).p50, stats(rest).p50, stats(whole).p50)
	return nil
}
