package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
)

// MaxTotalBytes bounds the embedded files together, uncompressed (issue
// 20: under 300 KiB), so the console stays a page, not an application
// that needs a build step to stay small.
const MaxTotalBytes = 300 << 10

// Prefix is the path the console is served under.
const Prefix = "/ui"

// ContentSecurityPolicy is sent with every file: scripts, styles and
// connections only from the node itself, no inline script or style (no
// 'unsafe-inline' anywhere), no plugins, no framing, no <base>.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console's files under Prefix: Prefix and Prefix+"/"
// are the page, Prefix+"/NAME" the file NAME. Only GET and HEAD.
type Handler struct {
	files map[string]file // by name below static/
}

// NewHandler reads the embedded files once.
func NewHandler() (*Handler, error) {
	files, err := load(static)
	if err != nil {
		return nil, err
	}
	return &Handler{files: files}, nil
}

// load reads every file of fsys's static/ tree.
func load(fsys fs.FS) (map[string]file, error) {
	files := map[string]file{}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) { // the system's mime table may lack or differ on these
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		if ct == "" {
			return fmt.Errorf("console: %s: no content type for its extension", p)
		}
		sum := sha256.Sum256(body)
		files[strings.TrimPrefix(p, "static/")] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: read embedded files: %w", err)
	}
	if _, ok := files["index.html"]; !ok {
		return nil, fmt.Errorf("console: no index.html among the embedded files")
	}
	return files, nil
}

// Names lists the embedded files in name order.
func (h *Handler) Names() []string {
	names := make([]string, 0, len(h.files))
	for n := range h.files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TotalBytes is the size of every embedded file together.
func (h *Handler) TotalBytes() int {
	n := 0
	for _, f := range h.files {
		n += len(f.body)
	}
	return n
}

// ServeHTTP serves one file with the security and cache headers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		name = "index.html"
	}
	f, ok := h.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	// The files change only with the binary: a browser keeps them and
	// asks again each time (no-cache), answered 304 while the ETag holds,
	// so an upgraded node never runs an old script against its new API.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", f.contentType)
	hd.Set("Content-Length", fmt.Sprint(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(f.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag.
func etagMatches(header, etag string) bool {
	for _, m := range strings.Split(header, ",") {
		m = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(m), "W/"))
		if m == etag || m == "*" {
			return true
		}
	}
	return false
}
