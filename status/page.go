package status

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"
)

// assets are the status page: one HTML document, its stylesheet and its script, served from
// the binary with no build step and nothing fetched from elsewhere.
//
//go:embed page/index.html page/style.css page/app.js
var assets embed.FS

// pageCSP allows the page only its own script, stylesheet and API: no inline code, no other
// origin.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// page serves the status page.
type page struct {
	html   []byte
	static http.HandlerFunc
}

// newPage renders the page's HTML once, with the refresh interval.
func newPage(refresh time.Duration) (*page, error) {
	t, err := template.ParseFS(assets, "page/index.html")
	if err != nil {
		return nil, fmt.Errorf("status: page template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct{ RefreshMS int64 }{refresh.Milliseconds()}); err != nil {
		return nil, fmt.Errorf("status: page template: %w", err)
	}
	sub, err := fs.Sub(assets, "page")
	if err != nil {
		return nil, fmt.Errorf("status: page assets: %w", err)
	}
	files := http.FileServerFS(sub)
	p := &page{html: b.Bytes()}
	p.static = func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("file") {
		case "style.css", "app.js":
		default:
			writeError(w, http.StatusNotFound, "status: no such file: "+r.URL.Path)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + r.PathValue("file")
		files.ServeHTTP(w, r2)
	}
	return p, nil
}

// index serves the page's HTML.
func (p *page) index(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("Cache-Control", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(p.html)
}
