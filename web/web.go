// Package web is the operator console, static assets embedded with
// go:embed and served on the host listener at /console/ (never on the
// agent listener).
package web

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/go-chi/chi/v5"
)

//go:embed static
var static embed.FS

// Mount serves the console under /console/ on r.
func Mount(r chi.Router) {
	sub, _ := fs.Sub(static, "static")
	files := http.StripPrefix("/console/", http.FileServerFS(sub))
	r.Get("/console", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/console/", http.StatusMovedPermanently)
	})
	r.Get("/console/*", files.ServeHTTP)
}
