package status

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/ppboost/ppboost/internal/httpserve"
)

//go:embed page.html
var pageHTML string

// initialMarker is where the page carries the status it was served with
// (so that it renders at once, and as a saved file).
const initialMarker = "__INITIAL_STATUS__"

// csp allows the page's own inline script and style (by hash), requests to
// its own origin, and nothing else: no external resource, and no script an
// injected string could add.
var csp = func() string {
	hash := func(open, close string) string {
		i := strings.Index(pageHTML, open)
		if i < 0 {
			panic("status: page.html lacks " + open)
		}
		body := pageHTML[i+len(open):]
		j := strings.Index(body, close)
		if j < 0 {
			panic("status: page.html lacks " + close)
		}
		sum := sha256.Sum256([]byte(body[:j]))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'none'; script-src " + hash("<script>", "</script>") + "; style-src " + hash("<style>", "</style>") +
		"; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

// Handler serves the page at / and its JSON at /status.json.
func Handler(b *Board) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status.json", func(w http.ResponseWriter, r *http.Request) {
		if !allowed(w, r) {
			return
		}
		body, err := json.Marshal(b.Status())
		if err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		headers(w, "application/json")
		w.Write(append(body, '\n'))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/index.html" {
			http.NotFound(w, r)
			return
		}
		if !allowed(w, r) {
			return
		}
		page, err := Page(b.Status())
		if err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		headers(w, "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", csp)
		w.Write([]byte(page))
	})
	return mux
}

// Page is the HTML page carrying s. encoding/json escapes <, > and & (and
// U+2028, U+2029), so no string in s can end the script element it sits in.
func Page(s Status) (string, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return strings.Replace(pageHTML, initialMarker, string(body), 1), nil
}

func allowed(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}

func headers(w http.ResponseWriter, ctype string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

// Listen binds addr (host:port) for the status server; flag names the
// flag in the error.
func Listen(ctx context.Context, flag, addr string) (net.Listener, error) {
	if addr == "" {
		return nil, fmt.Errorf("%s: empty address", flag)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("%s %q: want HOST:PORT, e.g. 127.0.0.1:8080: %v", flag, addr, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, addr, err)
	}
	return ln, nil
}

// MaxConns is how many connections the status server holds at once; more
// wait in the kernel's accept queue.
const MaxConns = httpserve.MaxConns

// Serve serves h on ln until ctx is cancelled, then shuts down (at most
// 2 s for requests in flight). It closes ln. At most MaxConns connections
// are open at once, and each must send its request headers within 5 s.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	return httpserve.Serve(ctx, "status", ln, h)
}
