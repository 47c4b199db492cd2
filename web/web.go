// Package web is the operator console, static assets embedded with
// go:embed and served on the host listener at /console/ (never on the
// agent listener).
//
// The console is two halves:
//
//   - the static page (HTML, CSS, JS modules) under /console/, and
//     codes.json, the gateway's problem table (package problem),
//     served by [Console.Public] WITHOUT the host token: browsers cannot
//     attach a bearer token to a page load, and the files hold no data;
//   - the data routes under /console/, mounted by [Console.Mount] on the
//     host router AFTER the host-token check: the contract as JSON
//     (/console/contract.json, for the try-a-tool forms) and a same-origin
//     proxy to the agent listener (/console/agent/v1/runs/{runId}/{tool}).
//
// Everything else the page reads is the host API itself (/host/v1/...),
// fetched with the host token the operator types in once (kept in the
// tab's sessionStorage).
package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v3"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/problem/problemhttp"
	"github.com/loom-gateway/gateway/internal/reqid"
)

//go:embed static
var static embed.FS

// Options configures the console.
type Options struct {
	// AgentURL is the agent listener's base URL, e.g.
	// http://127.0.0.1:8080. An unspecified host (0.0.0.0, ::) is
	// reached on loopback. Empty: the try-a-tool proxy answers 503.
	AgentURL string
}

// Console serves the operator console.
type Console struct {
	files    fs.FS
	contract []byte
	codes    []byte
	agent    *url.URL
	proxy    *httputil.ReverseProxy
}

// New builds the console: the embedded files, the contract converted to
// JSON once, and the proxy to the agent listener.
func New(o Options) (*Console, error) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	contract, err := contractJSON(api.Spec)
	if err != nil {
		return nil, fmt.Errorf("web: contract: %w", err)
	}
	c := &Console{files: sub, contract: contract, codes: codesJSON()}
	if o.AgentURL != "" {
		u, err := url.Parse(o.AgentURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("web: agent URL %q: want http://host:port", o.AgentURL)
		}
		u.Host = loopbackIfUnspecified(u.Host)
		c.agent = u
		c.proxy = &httputil.ReverseProxy{Rewrite: c.rewrite, ErrorHandler: proxyError}
	}
	return c, nil
}

// loopbackIfUnspecified turns 0.0.0.0:p / [::]:p / :p into the loopback
// address of the same family, which is where this process listens too.
func loopbackIfUnspecified(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	ip := net.ParseIP(host)
	switch {
	case host == "" || (ip != nil && ip.IsUnspecified() && ip.To4() != nil):
		return net.JoinHostPort("127.0.0.1", port)
	case ip != nil && ip.IsUnspecified():
		return net.JoinHostPort("::1", port)
	}
	return hostport
}

// contractJSON converts the YAML contract to JSON, keeping every
// mapping's keys in the contract's order (a schema's properties are the
// try-a-tool form's fields, in that order).
func contractJSON(spec []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := nodeJSON(&b, &doc, 0); err != nil {
		return nil, err
	}
	if !json.Valid(b.Bytes()) {
		return nil, errors.New("converted contract is not valid JSON")
	}
	return b.Bytes(), nil
}

// nodeJSON writes n as JSON, mapping keys in document order.
func nodeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 256 {
		return errors.New("contract nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return nodeJSON(b, n.Content[0], depth+1)
	case yaml.AliasNode:
		return nodeJSON(b, n.Alias, depth+1)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, c, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("line %d: unsupported mapping key", k.Line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value)
			b.Write(key)
			b.WriteByte(':')
			if err := nodeJSON(b, v, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.Write(out)
		return nil
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// Public wraps the host router: GET and HEAD of /console, /console/ and
// the embedded files are answered here, without the host token; every
// other request goes on to next (where the host token is checked).
func (c *Console) Public(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/console" {
			staticHeaders(w)
			http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/console/")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		if name == "codes.json" {
			staticHeaders(w)
			w.Header().Set("Content-Type", "application/json")
			http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(c.codes))
			return
		}
		if !c.isFile(name) {
			next.ServeHTTP(w, r)
			return
		}
		staticHeaders(w)
		http.ServeFileFS(w, r, c.files, name)
	})
}

// isFile reports whether name is a regular embedded file (no directory
// listings, no dot files).
func (c *Console) isFile(name string) bool {
	if !fs.ValidPath(name) || path.Clean(name) != name || strings.HasPrefix(path.Base(name), ".") {
		return false
	}
	fi, err := fs.Stat(c.files, name)
	return err == nil && fi.Mode().IsRegular()
}

// staticHeaders are the console page's headers: no framing, no sniffing,
// and a content security policy that allows only this origin's scripts,
// styles and fetches, so no data row can ever run as code.
func staticHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
}

// agentRoutes are the agent listener's POST routes the proxy forwards.
var agentRoutes = map[string]bool{
	"loom_search": true, "loom_page_discover": true, "loom_page_inspect": true,
	"loom_page_read": true, "loom_people": true, "loom_calendar_list": true,
	"loom_context": true, "loom_profile": true,
	"describe_handle": true, "result": true,
}

// Mount mounts the console's data routes on r, the host router behind
// the host-token check:
//
//	GET  /console/contract.json                     the contract as JSON
//	POST /console/agent/v1/runs/{runId}/{tool}      the try-a-tool proxy
//
// The proxy call carries the host token as X-Host-Token (Authorization
// holds the run token, which is forwarded as is).
//
// It also routes GET of the public files, which Public answers before the
// router is reached, so that the router knows their paths: another method
// on one of them answers 405 with Allow, as on every route.
func (c *Console) Mount(r chi.Router) {
	r.Get("/console/contract.json", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(c.contract)
	})
	r.Post("/console/agent/v1/runs/{runId}/{tool}", c.forward)
	files := c.Public(http.NotFoundHandler())
	r.Method(http.MethodGet, "/console", files)
	r.Method(http.MethodGet, "/console/", files)
	r.Method(http.MethodGet, "/console/codes.json", files)
	_ = fs.WalkDir(c.files, ".", func(name string, _ fs.DirEntry, err error) error {
		if err == nil && c.isFile(name) {
			r.Method(http.MethodGet, "/console/"+name, files)
		}
		return nil
	})
}

// validRunID is the contract's run id pattern, less the dot segments a
// URL join would resolve.
func validRunID(id string) bool {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (c *Console) forward(w http.ResponseWriter, r *http.Request) {
	if !agentRoutes[chi.URLParam(r, "tool")] || !validRunID(chi.URLParam(r, "runId")) {
		p := problem.New(problem.RouteNotFound)
		p.RequestID = reqid.FromContext(r.Context())
		problemhttp.Write(w, p)
		return
	}
	if c.proxy == nil {
		p := problem.Custom("agent_unreachable", problem.Info{
			Status: http.StatusServiceUnavailable,
			Title:  agentUnreachable.Title,
			Detail: "The console has no agent listener to forward to.",
		})
		p.RequestID = reqid.FromContext(r.Context())
		problemhttp.Write(w, p)
		return
	}
	// The answer is the agent's, headers included: drop what the host
	// router set on this response.
	for k := range w.Header() {
		delete(w.Header(), k)
	}
	c.proxy.ServeHTTP(w, r)
}

// rewrite sends the call to the agent listener with the body, its
// Content-Type, the run token and this request's id only; the host
// token never leaves.
func (c *Console) rewrite(pr *httputil.ProxyRequest) {
	in := pr.In
	out := pr.Out
	// runId and tool were checked by forward (the run id pattern, a known
	// route), so they need no escaping.
	u := *c.agent
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/runs/" + chi.URLParam(in, "runId") + "/" + chi.URLParam(in, "tool")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	out.URL = &u
	out.Host = ""
	h := http.Header{}
	for _, k := range []string{"Authorization", "Content-Type", "Accept"} {
		if v := in.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	// The agent's request keeps this request's id: one id finds the
	// console's request record, the agent's, its audit record and its
	// problem.
	reqid.Forward(h, reqid.FromContext(in.Context()))
	out.Header = h
}

// agentUnreachable is the console proxy's own problem, not one of the
// contract's codes: the agent listener could not be reached.
var agentUnreachable = problem.Info{
	Status: http.StatusBadGateway,
	Title:  "Agent listener unreachable",
	Detail: "The console could not reach the agent listener.",
}

func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	p := problem.Custom("agent_unreachable", agentUnreachable)
	p.RequestID = reqid.FromContext(r.Context())
	problemhttp.Write(w, p)
}

// codesJSON is what /console/codes.json answers: the gateway's problem
// table (package problem) and the console's own agent_unreachable.
func codesJSON() []byte {
	codes := map[string]problem.Info{"agent_unreachable": agentUnreachable}
	for _, c := range problem.Codes() {
		codes[string(c)] = problem.Lookup(c)
	}
	b, _ := json.Marshal(codes)
	return b
}
