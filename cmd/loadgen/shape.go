package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

// defaultShapeBytes is the size of a --shape payload without
// --payload-bytes.
const defaultShapeBytes = 48 << 20

// useShape has the fake loom print the payload of --shape (a
// benchdata.Shape of --payload-bytes, 48 MB by default) and returns the
// path to run it by; it sets c.page for a page.read shape.
func useShape(c *config, dir, loomPath string) (string, error) {
	sh, err := benchdata.ShapeNamed(c.shape)
	if err != nil {
		return "", err
	}
	if c.payloadBytes <= 0 {
		c.payloadBytes = defaultShapeBytes
	}
	c.page = sh.Tool == "loom_page_read"
	// fastloom prints <its name>.payload when there is one.
	sized := filepath.Join(dir, "shapeloom")
	if err := os.Symlink(loomPath, sized); err != nil {
		return "", err
	}
	if err := os.WriteFile(sized+".payload", sh.Payload(c.payloadBytes), 0o600); err != nil {
		return "", err
	}
	return sized, nil
}

// describeShape is the line --shape adds before the --memory report.
func describeShape(c config, w io.Writer) {
	if c.shape == "" {
		return
	}
	sh, _ := benchdata.ShapeNamed(c.shape)
	want := "a result"
	if sh.Refused {
		want = "malformed_payload"
	}
	fmt.Fprintf(w, "loadgen --shape %s: %s of %d bytes, answered %s\n", sh.Name, sh.Tool, c.payloadBytes, want)
}

// shapeCall makes one call of the --shape tool and checks that it is
// answered as the shape is: a result, or malformed_payload.
func shapeCall(ctx context.Context, client *http.Client, agentURL string, r runToken, c config) error {
	sh, err := benchdata.ShapeNamed(c.shape)
	if err != nil {
		return err
	}
	input := `{"query":"atlas"}`
	if c.page {
		input = `{"target":"Projects/Atlas"}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, agentURL+"/v1/runs/"+r.id+"/"+sh.Tool, strings.NewReader(input))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	ok := resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"status":"ok"`)
	if sh.Refused {
		ok = resp.StatusCode == http.StatusBadGateway && strings.Contains(string(body), `"malformed_payload"`)
	}
	if !ok {
		return fmt.Errorf("%s shape %s: status %d: %.300s", sh.Tool, sh.Name, resp.StatusCode, body)
	}
	return nil
}
