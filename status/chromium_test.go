package status

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
)

// chromiumDOM serves h and returns the DOM of its page after the page's
// script ran, in headless Chromium. It skips when chromium is not installed
// or under -short, unless PPBOOST_CHROMIUM=1 (CI's testnet/status_check.sh
// sets it), which requires chromium.
func chromiumDOM(t *testing.T, h http.Handler) string {
	t.Helper()
	forced := os.Getenv("PPBOOST_CHROMIUM") != ""
	chromium, err := exec.LookPath("chromium")
	switch {
	case err != nil && forced:
		t.Fatal("PPBOOST_CHROMIUM is set but chromium is not installed")
	case err != nil:
		t.Skip("chromium is not installed (CI installs Debian's; PPBOOST_CHROMIUM=1 requires it)")
	case testing.Short() && !forced:
		t.Skip("headless Chromium: skipped under -short (PPBOOST_CHROMIUM=1 runs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--virtual-time-budget=3000",
		"--dump-dom", "http://"+ln.Addr().String()+"/").Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

// TestChromiumRendersHostileTextAsText loads a page whose owner-supplied
// reasons carry markup in headless Chromium and checks the DOM after the
// page's script ran: the markup is text, no element was made from it, and
// the page's own rows and curve are there.
func TestChromiumRendersHostileTextAsText(t *testing.T) {
	dom := chromiumDOM(t, Handler(fakeUserBoard(3)))
	for _, bad := range []string{"<img", "<script>alert"} {
		if strings.Contains(dom, bad) {
			t.Fatalf("the DOM holds %q: outsider markup became markup", bad)
		}
	}
	if n := strings.Count(dom, "<script"); n != 2 {
		t.Fatalf("%d script elements in the DOM, want the page's 2", n)
	}
	// The reasons are shown, as text (serialised escaped).
	if !strings.Contains(dom, "&lt;img src=x onerror=alert(2)&gt;") || !strings.Contains(dom, "&lt;/script&gt;&lt;script&gt;alert(1)") {
		t.Fatal("the hostile reasons are not on the page as text")
	}
	// And the page rendered: 3 rows, 2 of them kept, the curve of the kept rounds.
	if n := strings.Count(dom, `<tr class="round `); n != 3 {
		t.Fatalf("%d round rows, want 3", n)
	}
	if !strings.Contains(dom, `<path class="curve" data-series="test accuracy"`) {
		t.Fatal("no curve path")
	}
}

// DOM pieces the outcome pages are checked on.
var (
	badgeRE   = regexp.MustCompile(`<span id="state" class="badge ([^"]*)">([^<]*)</span>`)
	elapsedRE = regexp.MustCompile(`<span id="elapsed">([^<]*)</span>`)
	outcomeRE = regexp.MustCompile(`<div id="outcome" class="outcome">([^<]*)</div>`)
)

var scriptRE = regexp.MustCompile(`(?s)<script.*?</script>`)

// visible is the DOM without its script elements (the page's code and its
// initial JSON): what the page shows.
func visible(dom string) string { return scriptRE.ReplaceAllString(dom, "") }

// kvTable is the rows of the page's key-value table id, as "key: value".
func kvTable(t *testing.T, dom, id string) map[string]string {
	t.Helper()
	m := regexp.MustCompile(`<table class="kv" id="` + id + `">(.*?)</table>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no table %s in the DOM", id)
	}
	rows := map[string]string{}
	for _, r := range regexp.MustCompile(`<tr><td>([^<]*)</td><td>([^<]*)</td></tr>`).FindAllStringSubmatch(m[1], -1) {
		rows[r[1]] = r[2]
	}
	return rows
}

// TestChromiumOutcomes renders the data user's page of a complete, a
// partial and a failed session (each in another mode) in headless Chromium
// and checks the DOM: the badge's class and word are the outcome's kind (a
// partial page does not say failed), rounds kept of planned and the
// dropped attempts, the mode's words (a secure sum only when one runs),
// epsilon per owner, each attempt's own time, and "ended after" the
// session's length.
func TestChromiumOutcomes(t *testing.T) {
	for _, tc := range []struct {
		outcome, mode string
		secureSum     string // the secure sum row
		privacy       string // the privacy row starts so
		perOwner      string
	}{
		{"complete", "validation ldp", "none runs", "local (LDP)", "5.00"},
		{"partial", "securesum ldp", "shamir, for errₘ", "local (LDP)", "7.00"}, // 5 + 4 err dealings of 0.5
		{"failed", "validation distributed", "shamir, for the shares", "distributed", "5.00"},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			oc, mc := outcomeCases[slices.IndexFunc(outcomeCases, func(c outcomeCase) bool { return c.name == tc.outcome })],
				modeCases[slices.IndexFunc(modeCases, func(c modeCase) bool { return c.name == tc.mode })]
			b, _ := endedBoard(oc, mc, 30*time.Second)
			dom := chromiumDOM(t, Handler(b))
			badge := badgeRE.FindStringSubmatch(dom)
			if badge == nil || badge[1] != tc.outcome || badge[2] != tc.outcome {
				t.Fatalf("badge %q, want class and word %q", badge, tc.outcome)
			}
			if tc.outcome != "failed" && (strings.Contains(visible(dom), "failed</span>") || badge[2] == "failed") {
				t.Fatal("a session with a model shows the failed badge")
			}
			if m := outcomeRE.FindStringSubmatch(dom); m == nil || !strings.HasPrefix(m[1], "Outcome: "+oc.outcome.String()) {
				t.Fatalf("outcome line %q, want %q", m, oc.outcome.String())
			}
			if m := elapsedRE.FindStringSubmatch(dom); m == nil || !strings.HasPrefix(m[1], "ended after 1 min 5 s, at ") {
				t.Fatalf("elapsed %q, want ended after 1 min 5 s", m)
			}
			if strings.Contains(visible(dom), "running for") {
				t.Fatal("an ended session's page says running for")
			}
			cfg := kvTable(t, dom, "config")
			if want := fmt.Sprintf("%d of 3 planned", oc.kept); cfg["rounds kept"] != want {
				t.Fatalf("rounds kept %q, want %q (config %v)", cfg["rounds kept"], want, cfg)
			}
			if cfg["dropped attempts"] != fmt.Sprint(oc.dropped) || cfg["in flight"] != "" {
				t.Fatalf("dropped attempts %q, in flight %q; want %d and none", cfg["dropped attempts"], cfg["in flight"], oc.dropped)
			}
			if cfg["secure sum"] != tc.secureSum || !strings.HasPrefix(cfg["privacy"], tc.privacy) {
				t.Fatalf("secure sum %q, privacy %q; want %q, %q…", cfg["secure sum"], cfg["privacy"], tc.secureSum, tc.privacy)
			}
			errFrom := "the data user's validation set"
			if mc.alpha == boost.AlphaSecureSum {
				errFrom = "a secure sum"
			}
			if !strings.HasPrefix(cfg["errₘ from"], errFrom) {
				t.Fatalf("errₘ from %q, want %q…", cfg["errₘ from"], errFrom)
			}
			if tc.secureSum == "none runs" {
				for k, v := range cfg {
					if strings.Contains(v, "shamir") {
						t.Fatalf("no sum runs, but the session table says %q: %q", k, v)
					}
				}
			}
			bu := kvTable(t, dom, "budget")
			if got := bu["ε per owner, at most (each owner's own budget)"]; got != tc.perOwner {
				t.Fatalf("ε per owner %q, want %s (budget %v)", got, tc.perOwner, bu)
			}
			for k := range bu {
				if strings.Contains(k, "sum") {
					t.Fatalf("the budget shows a sum over owners: %q", k)
				}
			}
			// The round table: every attempt's own time (2.0 s), none
			// counted from the session's start (52.0 s and on).
			if n := strings.Count(dom, `<td>2.0 s</td>`); n != len(oc.attempts) {
				t.Fatalf("%d attempts took 2.0 s in the table, want %d", n, len(oc.attempts))
			}
			if strings.Contains(visible(dom), "52.0 s") {
				t.Fatal("an attempt's time is counted from the session's start")
			}
		})
	}
}
