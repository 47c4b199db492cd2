package tests

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// rawConnRequest writes req on a fresh connection to the agent listener and
// reads one response.
func rawConnRequest(t *testing.T, g *gateway, req string) (*http.Response, map[string]any) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(g.AgentURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var p map[string]any
	_ = json.NewDecoder(res.Body).Decode(&p)
	return res, p
}

// TestBodyFraming: a client still connected that sends a malformed chunk
// is answered 400 invalid_input without a pointer, not 499 cancelled; a
// JSON body declared in a charset other than UTF-8 is refused (415)
// however the other parameters read.
func TestBodyFraming(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	r := g.newRun(t, client.CreateRunInput{})
	head := "POST /v1/runs/" + r.ID + "/loom_search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + r.Token + "\r\n"

	res, p := rawConnRequest(t, g, head+"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	if res.StatusCode != http.StatusBadRequest || p["code"] != "invalid_input" || p["pointer"] != nil {
		t.Errorf("malformed chunk: %d %v, want 400 invalid_input without a pointer", res.StatusCode, p)
	}

	for _, ct := range []string{"application/json; charset=latin1; junk", "application/json; junk; charset=latin1"} {
		body := `{"query":"atlas"}`
		res, p := rawConnRequest(t, g, head+"Content-Type: "+ct+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		if res.StatusCode != http.StatusUnsupportedMediaType || p["code"] != "unsupported_media_type" {
			t.Errorf("%q: %d %v, want 415 unsupported_media_type", ct, res.StatusCode, p)
		}
	}
}
