// Package reqctx carries a request's id in a context, for code that links
// no HTTP package (the core); package reqid gives each request its id.
package reqctx

import "context"

type key struct{}

// FromContext returns the request id of ctx ("" outside a gateway request).
func FromContext(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// NewContext returns ctx carrying id as its request id.
func NewContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}
