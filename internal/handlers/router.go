package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"
	middleware "github.com/oapi-codegen/nethttp-middleware"

	"github.com/loom-gateway/gateway/api"
	"github.com/loom-gateway/gateway/api/agent"
	"github.com/loom-gateway/gateway/api/host"
	"github.com/loom-gateway/gateway/internal/reqid"
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
// contract; a violation answers its problem through writeProblem. A POST
// that the compiled check of its operation accepts (fastvalid.go) skips
// kin-openapi; every other request, and every refusal, is kin-openapi's.
//
// Authentication is done before validation (agentAuth, hostAuth), so the
// filter only checks shapes: the spec's security requirements are dropped
// here, and the validated (and defaulted) body is thrown away.
func (d *Deps) validator(spec *openapi3.T) func(http.Handler) http.Handler {
	spec.Security = nil
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			op.Security = &openapi3.SecurityRequirements{}
		}
	}
	fast := fastOps(spec)
	kin := middleware.OapiRequestValidatorWithOptions(spec, &middleware.Options{
		Options: openapi3filter.Options{
			AuthenticationFunc:  func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
			SkipSettingDefaults: true,
		},
		DoNotValidateServers:  true,
		SilenceServersWarning: true,
		DiscardValidatedValue: true,
		ErrorHandlerWithOpts: func(ctx context.Context, err error, w http.ResponseWriter, r *http.Request, opts middleware.ErrorHandlerOpts) {
			body, _ := r.Context().Value(bodyKey{}).([]byte)
			writeProblem(w, r, d.logger(), validationError(err, opts.StatusCode, body))
		},
	})
	return func(next http.Handler) http.Handler {
		checked := kin(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				// The contract lists GET only; a HEAD of a GET route
				// (chimw.GetHead) is validated as that GET, then served
				// as the HEAD it is.
				get := r.Clone(r.Context())
				get.Method = http.MethodGet
				valid := false
				kin(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { valid = true })).ServeHTTP(w, get)
				if valid {
					next.ServeHTTP(w, r)
				}
				return
			}
			if r.Method == http.MethodPost {
				if rc := chi.RouteContext(r.Context()); rc != nil {
					if op := fast[rc.RoutePattern()]; op != nil && op.accepts(r) {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			checked.ServeHTTP(w, withBody(r))
		})
	}
}

// validationError classifies a validator error without reading its text.
// body is the request body kin-openapi refused, nil if none.
func validationError(err error, status int, body []byte) error {
	switch status {
	case http.StatusNotFound:
		return errRouteNotFound
	case http.StatusMethodNotAllowed:
		return errMethodNotAllowed
	}
	re, ok := errors.AsType[*openapi3filter.RequestError](err)
	if !ok {
		return &inputError{}
	}
	if re.Parameter != nil {
		return &inputError{Pointer: re.Parameter.Name}
	}
	if strings.Contains(re.Reason, "Content-Type") || strings.Contains(re.Reason, "content type") {
		return errUnsupportedMedia
	}
	if se, ok := errors.AsType[*openapi3.SchemaError](err); ok {
		path := se.JSONPointer()
		if p, ok := unknownKeyPointer(body, bodySchema(re), se.Schema, path); ok {
			return &inputError{Pointer: p}
		}
		var choices []string
		if se.SchemaField == "enum" && se.Schema != nil {
			for _, e := range se.Schema.Enum {
				if s, ok := e.(string); ok {
					choices = append(choices, s)
				}
			}
		}
		return &inputError{Pointer: jsonPointer(path), Choices: choices}
	}
	return &inputError{}
}

// AgentRouter is the agent listener's handler: request id, recover, body
// checks, the run-token check, the validator and the generated routes.
// Nothing here can create a run, read another run or change a ceiling.
func AgentRouter(d *Deps, a *Agent, spec *openapi3.T) http.Handler {
	r := chi.NewRouter()
	r.Use(reqid.Middleware, d.logRequests("agent"), securityHeaders, recoverer(d.logger()), chimw.GetHead)
	r.Get("/healthz", d.healthz)
	r.Get("/openapi.yaml", serveSpec)
	r.Group(func(r chi.Router) {
		r.Use(agentAuth(d.Core, d.logger()), jsonBodies(d.maxRequestBytes(), d.logger()), d.validator(spec))
		si := agent.NewStrictHandlerWithOptions(a, nil, agent.StrictHTTPServerOptions{
			RequestErrorHandlerFunc:  d.requestErrorHandler,
			ResponseErrorHandlerFunc: d.errorHandler,
		})
		agent.HandlerWithOptions(si, agent.ChiServerOptions{BaseRouter: r, ErrorHandlerFunc: d.requestErrorHandler})
	})
	auth := agentAuth(d.Core, d.logger())
	r.NotFound(d.refuse(auth, errRouteNotFound))
	r.MethodNotAllowed(d.refuse(auth, errMethodNotAllowed))
	return r
}

// HostRouter is the host listener's handler. extra mounts what is served
// beside the contract (metrics, the console) after the host-token check.
func HostRouter(d *Deps, h *Host, spec *openapi3.T, extra func(chi.Router)) http.Handler {
	r := chi.NewRouter()
	r.Use(reqid.Middleware, d.logRequests("host"), securityHeaders, recoverer(d.logger()), chimw.GetHead)
	r.Get("/healthz", d.healthz)
	r.Get("/readyz", d.readyz)
	r.Group(func(r chi.Router) {
		r.Use(hostAuth(d.HostToken, d.logger()))
		if extra != nil {
			extra(r)
		}
		r.Group(func(r chi.Router) {
			r.Use(jsonBodies(d.maxRequestBytes(), d.logger()), d.validator(spec))
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
func (d *Deps) refuse(auth func(http.Handler) http.Handler, err error) http.HandlerFunc {
	return auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if errors.Is(err, errMethodNotAllowed) && len(allowedMethods(r)) == 0 {
			writeProblem(w, r, d.logger(), errRouteNotFound)
			return
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
	if _, ok := errors.AsType[*inputError](err); ok {
		writeProblem(w, r, d.logger(), err)
		return
	}
	writeProblem(w, r, d.logger(), &inputError{})
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
