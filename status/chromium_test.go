package status

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChromiumRendersHostileTextAsText loads a page whose owner-supplied
// reasons carry markup in headless Chromium (PPBOOST_CHROMIUM=1; CI's
// testnet/status_check.sh sets it) and checks the DOM after the page's
// script ran: the markup is text, no element was made from it, and the
// page's own rows and curve are there.
func TestChromiumRendersHostileTextAsText(t *testing.T) {
	if os.Getenv("PPBOOST_CHROMIUM") == "" {
		t.Skip("set PPBOOST_CHROMIUM=1 to run headless Chromium")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("PPBOOST_CHROMIUM is set but chromium is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler(fakeUserBoard(3)), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	out, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--virtual-time-budget=3000",
		"--dump-dom", "http://"+ln.Addr().String()+"/").Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
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
