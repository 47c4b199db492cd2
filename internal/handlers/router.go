package handlers

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/api/host"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid"
	"github.com/loom-gateway/gateway/internal/telemetry/httptrace"
	"github.com/loom-gateway/gateway/internal/validate"
)

// LoadSpec parses api/openapi.yaml and keeps only the operations tagged
// tag, so a listener's validator cannot even match another listener's
// routes.
func LoadSpec(tag string) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(api.Spec)
	if err != nil {
		return nil, err
	}
	if err := spec.Validate(loader.Context); err != nil {
		return nil, err
	}
	spec.Servers = nil
	paths := openapi3.NewPaths()
	for path, item := range spec.Paths.Map() {
		keep := false
		for _, op := range item.Operations() {
			for _, t := range op.Tags {
				keep = keep || t == tag
			}
		}
		if keep {
			paths.Set(path, item)
		}
	}
	spec.Paths = paths
	return spec, nil
}

// validator checks every request against the listener's part of the
// contract with check, the listener's validator (package validate: kin-openapi's parameter check and the
// operation's compiled body schema, on the body jsonBodies read); a
// violation answers its problem. A HEAD of a GET route (chimw.GetHead) is
// validated as that GET.
func (d *Deps) validator(check *validate.Validator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := r.Method
			if method == http.MethodHead {
				method = http.MethodGet
			}
			rc := chi.RouteContext(r.Context())
			if rc == nil || !check.Has(method, rc.RoutePattern()) {
				writeProblem(w, r, d.logger(), errRouteNotFound)
				return
			}
			params := make(map[string]string, len(rc.URLParams.Keys))
			for i, k := range rc.URLParams.Keys {
				params[k] = rc.URLParams.Values[i]
			}
			body, _ := r.Context().Value(bodyKey{}).([]byte)
			if err := check.Request(r, method, rc.RoutePattern(), params, body); err != nil {
				writeProblem(w, r, d.logger(), err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// AgentRouter is the agent listener's handler: request id, recover, body
// checks, the run-token check, the validator and the generated routes.
// Nothing here can create a run, read another run or change a ceiling.
func AgentRouter(d *Deps, a *Agent, check *validate.Validator) http.Handler {
	r := chi.NewRouter()
	r.Use(reqid.Middleware, httptrace.HTTPServer(routeOf, methodOf), d.logRequests("agent"), securityHeaders, recoverer(d.logger()), chimw.GetHead, d.hostAndOrigin, noOAuth)
	r.Get("/healthz", d.healthz)
	r.Get("/openapi.yaml", serveSpec)
	r.Group(func(r chi.Router) {
		r.Use(agentClaims(d.Core, d.logger()), jsonBodies(d.maxRequestBytes(), d.logger()), d.validator(check))
		si := agent.NewStrictHandlerWithOptions(a, nil, agent.StrictHTTPServerOptions{
			RequestErrorHandlerFunc:  d.requestErrorHandler,
			ResponseErrorHandlerFunc: d.errorHandler,
		})
		agent.HandlerWithOptions(si, agent.ChiServerOptions{BaseRouter: r, ErrorHandlerFunc: d.requestErrorHandler})
	})
	if d.MCP != nil {
		// The MCP face: the same token check and body limits; the SDK
		// answers each method as the protocol says. An ended run's
		// token is answered in the protocol's terms, so that an agent
		// SDK shows the model the text.
		var ended http.HandlerFunc
		if e, ok := d.MCP.(endedHandler); ok {
			ended = e.ServeEnded
		}
		// The face spends each request's budget itself (ServeRun).
		auth := agentAuthEnded(d.Core, d.logger(), ended, false)
		r.Group(func(r chi.Router) {
			r.Use(auth, jsonBodies(d.maxRequestBytes(), d.logger()))
			r.HandleFunc("/v1/runs/{runId}/mcp", func(w http.ResponseWriter, r *http.Request) {
				run, ok := runFrom(r.Context())
				if !ok {
					writeProblem(w, r, d.logger(), errUnauthorized)
					return
				}
				d.MCP.ServeRun(w, r, run)
			})
		})
	}
	auth := agentAuth(d.Core, d.logger())
	r.NotFound(d.refuse(auth, errRouteNotFound))
	r.MethodNotAllowed(d.refuse(auth, errMethodNotAllowed))
	return r
}

// endedHandler answers the request of a token whose run has ended, in a
// face's own terms (mcpface.Face.ServeEnded).
type endedHandler interface {
	ServeEnded(w http.ResponseWriter, r *http.Request)
}

// hostAndOrigin is the agent listener's one Host and Origin rule, for
// both faces: a Host that AllowedHosts (when set) does not name answers
// 421 host_not_allowed, and a browser Origin that AllowOrigins does not
// name 403 origin_not_allowed (a page must not drive a run's token: DNS
// rebinding), before the token is read. /healthz answers whatever the
// Host (a probe names the address it dials).
func (d *Deps) hostAndOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if len(d.AllowedHosts) > 0 && !slices.Contains(d.AllowedHosts, hostName(r.Host)) {
			writeProblem(w, r, d.logger(), errHostNotAllowed)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(d.AllowOrigins, o) {
			writeProblem(w, r, d.logger(), errOriginNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostName is a Host header without its port, lower-cased; an IPv6
// literal keeps its brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		host = h
	}
	return strings.ToLower(host)
}

// noOAuth answers the OAuth and OpenID discovery documents (RFC 9728,
// RFC 8414, OpenID Connect Discovery), at the root or under a path, 404
// without reading a token: the gateway has no OAuth, and a client that
// follows the MCP authorization spec stops looking for it there.
func noOAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/") || strings.Contains(r.URL.Path, "/.well-known/") {
			writeProblem(w, r, nil, errRouteNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostRouter is the host listener's handler. extra mounts what is served
// beside the contract (metrics, the console) after the host-token check.
func HostRouter(d *Deps, h *Host, check *validate.Validator, extra func(chi.Router)) http.Handler {
	r := chi.NewRouter()
	r.Use(reqid.Middleware, httptrace.HTTPServer(routeOf, methodOf), d.logRequests("host"), securityHeaders, recoverer(d.logger()), chimw.GetHead)
	r.Get("/healthz", d.healthz)
	r.Get("/readyz", d.readyz)
	r.Group(func(r chi.Router) {
		r.Use(hostAuth(d.HostToken, d.logger()))
		if extra != nil {
			extra(r)
		}
		r.Group(func(r chi.Router) {
			r.Use(jsonBodies(d.maxRequestBytes(), d.logger()), d.validator(check))
			si := host.NewStrictHandlerWithOptions(h, nil, host.StrictHTTPServerOptions{
				RequestErrorHandlerFunc:  d.requestErrorHandler,
				ResponseErrorHandlerFunc: d.errorHandler,
			})
			host.HandlerWithOptions(si, host.ChiServerOptions{BaseRouter: r, ErrorHandlerFunc: d.requestErrorHandler})
		})
	})
	auth := hostAuth(d.HostToken, d.logger())
	r.NotFound(d.refuse(auth, errRouteNotFound))
	r.MethodNotAllowed(d.refuse(auth, errMethodNotAllowed))
	return r
}

// refuse answers err after the listener's authentication, so an unknown
// route or method without a valid token still answers 401. A method chi
// does not know reaches the method-not-allowed handler whatever the path:
// on a path no route has, it is route_not_found.
func (d *Deps) refuse(auth func(http.Handler) http.Handler, refusal error) http.HandlerFunc {
	return auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := refusal
		if errors.Is(err, errMethodNotAllowed) && len(allowedMethods(r)) == 0 {
			err = errRouteNotFound
		}
		// On a run's path, an unknown tool is answered with what the
		// run may call.
		if run, ok := runFrom(r.Context()); ok && errors.Is(err, errRouteNotFound) && d.Core != nil {
			if rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1/runs/"+run.ID+"/"); !strings.Contains(rest, "/") {
				err = &routeError{choices: d.Core.Callable(run)}
			}
		}
		writeProblem(w, r, d.logger(), err)
	})).ServeHTTP
}

// routeMethods are the methods a route may take, in the order an Allow
// header lists them.
var routeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace,
}

// allowedMethods lists the methods the route of r's path takes (the Allow
// header of a 405): HEAD wherever GET is, since chimw.GetHead serves it.
// It is empty when no route has the path.
func allowedMethods(r *http.Request) []string {
	rc := chi.RouteContext(r.Context())
	if rc == nil || rc.Routes == nil {
		return nil
	}
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	has := func(m string) bool { return rc.Routes.Match(chi.NewRouteContext(), m, path) }
	var allow []string
	for _, m := range routeMethods {
		if has(m) || m == http.MethodHead && has(http.MethodGet) {
			allow = append(allow, m)
		}
	}
	return allow
}

// errorHandler renders an error a strict method returned.
func (d *Deps) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, r, d.logger(), err)
}

// requestErrorHandler renders a decoding or parameter error of the
// generated code as invalid_input; its text is never shown.
func (d *Deps) requestErrorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := errors.AsType[*problem.InputError](err); ok {
		writeProblem(w, r, d.logger(), err)
		return
	}
	writeProblem(w, r, d.logger(), &problem.InputError{})
}

func serveSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Length", strconv.Itoa(len(api.Spec)))
	_, _ = w.Write(api.Spec)
}

func (d *Deps) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}
