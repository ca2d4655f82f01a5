package status

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/session"
)

// hostile is outsider input that must reach the page as text only.
const hostile = `</script><script>alert(1)</script><img src=x onerror=alert(2)>&amp;"'` + "\u2028"

func fakeUserBoard(reports int) *Board {
	snap := session.UserSnapshot{Session: "s-1", State: session.UserShares, Round: 2, Attempt: 1,
		Config: session.SessionSummary{Learner: "stump", Mechanism: "pm", Epsilon: 5, Rounds: 3, OwnersPerRound: 2},
		Joined: 9, Roster: 9, Used: 4, NotJoinedTotal: 3, Selected: 2, Shares: 1,
		NotJoined: []session.ReasonCount{{Reason: session.CutReason(hostile), Count: 2}, {Reason: "epsilon 5 above this owner's limit 1", Count: 1}},
		Refusals:  []session.ReasonCount{{Reason: session.CutReason(hostile + strings.Repeat("z", 5000)), Count: 1}},
		Started:   time.Unix(1_700_000_000, 0)}
	b := NewUserBoard("12D3KooWuser", func() session.UserSnapshot { return snap }, nil)
	b.SetClock(func() time.Time { return time.Unix(1_700_000_030, 0) })
	for i := 0; i < reports; i++ {
		b.Round(session.RoundReport{RoundInfo: boost.RoundInfo{Round: i + 1, Attempt: 0, Owners: 2, Err: 0.2, Alpha: 1.3,
			Accepted: i%2 == 0, TestAccuracy: 0.8, Charged: 10}, Selected: 2, Answered: 2, Why: hostile})
	}
	return b
}

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestPageEscapesOutsiderInput(t *testing.T) {
	h := Handler(fakeUserBoard(3))
	rec := get(t, h, http.MethodGet, "/")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := rec.Body.String()
	// The page has exactly its own two script elements and one closing
	// tag each: the reason did not end the JSON block or add a script.
	if n := strings.Count(page, "<script"); n != 2 {
		t.Fatalf("%d <script in the page, want 2", n)
	}
	if n := strings.Count(page, "</script>"); n != 2 {
		t.Fatalf("%d </script> in the page, want 2", n)
	}
	if strings.Contains(page, "<img") || strings.Contains(page, "\u2028") {
		t.Fatal("outsider markup reached the page unescaped")
	}
	// The reason is there, as JSON-escaped text.
	if !strings.Contains(page, `\u003c/script\u003e\u003cscript\u003ealert(1)`) {
		t.Fatal("the reason is missing from the page's initial status")
	}
	// Negative control: the same page with the marker filled by hand,
	// without JSON's escaping, would break out of the block.
	raw := strings.Replace(pageHTML, initialMarker, `{"x":"`+hostile+`"}`, 1)
	if strings.Count(raw, "</script>") == 2 {
		t.Fatal("the negative control did not break out: the check above proves nothing")
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Fatalf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(page, "innerHTML") {
		t.Fatal("the page allows inline markup or loads external resources")
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(page) {
		t.Fatal("the page references an external resource")
	}
}

func TestStatusJSONBounds(t *testing.T) {
	b := fakeUserBoard(MaxRounds + 250)
	rec := get(t, Handler(b), http.MethodGet, "/status.json")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /status.json: %d %v", rec.Code, rec.Header())
	}
	var s Status
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Rounds) != MaxRounds || s.RoundsOmitted != 250 || s.Rounds[0].Round != 251 {
		t.Fatalf("%d rounds, %d omitted, first %d", len(s.Rounds), s.RoundsOmitted, s.Rounds[0].Round)
	}
	for _, r := range s.Rounds {
		if len(r.Why) > session.SnapshotMaxReasonBytes {
			t.Fatalf("why of %d bytes", len(r.Why))
		}
	}
	if len(s.Owners.Refusals[0].Reason) > session.SnapshotMaxReasonBytes || s.Owners.NotJoined != 3 {
		t.Fatalf("owners %+v", s.Owners)
	}
	// Every report took 2 shares, half of them kept; the counts cover the
	// omitted rows too. No err sum: each owner paid one share's epsilon at
	// most.
	n := MaxRounds + 250
	if s.Budget.SharesIn != 2*n || s.Budget.SharesDropped != n || s.Budget.UnusedOwners != 5 ||
		s.Budget.PerOwnerMax != 5 || s.Budget.ErrAttempts != 0 || s.DroppedAttempts != n/2 {
		t.Fatalf("budget %+v, %d dropped attempts", s.Budget, s.DroppedAttempts)
	}
	if s.Elapsed != 30 || s.Outcome != "" || s.State != "shares" {
		t.Fatalf("elapsed %v outcome %q state %q", s.Elapsed, s.Outcome, s.State)
	}
	// Owner events are bounded too.
	ob := NewOwnerBoard("p", func() session.OwnerSnapshot {
		return session.OwnerSnapshot{State: session.OwnerIdle, Spent: 1, Budget: 5}
	})
	for i := 0; i < MaxEvents+7; i++ {
		ob.OwnerEvent(session.OwnerEvent{Kind: session.OwnerEventRefused, Detail: hostile + strings.Repeat("w", 4000)})
	}
	os := ob.Status()
	if len(os.Events) != MaxEvents || os.EventsOmitted != 7 || len(os.Events[0].Detail) > session.SnapshotMaxReasonBytes ||
		float64(os.Budget.Left) != 4 {
		t.Fatalf("owner: %d events, %d omitted, budget %+v", len(os.Events), os.EventsOmitted, os.Budget)
	}
}

func TestStatusNonFiniteAndMethods(t *testing.T) {
	b := NewUserBoard("p", func() session.UserSnapshot { return session.UserSnapshot{State: session.UserFailed, Err: "no owners"} }, nil)
	b.Round(session.RoundReport{RoundInfo: boost.RoundInfo{Round: 1, Err: 0, Alpha: math.Inf(1), Z: math.NaN()}})
	h := Handler(b)
	rec := get(t, h, http.MethodGet, "/status.json")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"alpha":null`) || !strings.Contains(rec.Body.String(), `"outcome":"failed: 0 of 0 rounds (no owners)"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if rec := get(t, h, http.MethodPost, "/status.json"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", rec.Code)
	}
	if rec := get(t, h, http.MethodGet, "/elsewhere"); rec.Code != http.StatusNotFound {
		t.Fatalf("GET /elsewhere: %d", rec.Code)
	}
	if rec := get(t, h, http.MethodHead, "/"); rec.Code != http.StatusOK {
		t.Fatalf("HEAD /: %d", rec.Code)
	}
}

// The board reads the node at most every 500 ms however often it is asked.
func TestStatusReadsTheNodeAtMostEveryHalfSecond(t *testing.T) {
	reads := 0
	now := time.Unix(0, 0)
	b := NewUserBoard("p", func() session.UserSnapshot { reads++; return session.UserSnapshot{} }, nil)
	b.SetClock(func() time.Time { return now })
	for i := 0; i < 100; i++ {
		b.Status()
		now = now.Add(10 * time.Millisecond) // 1 s in all
	}
	if reads != 2 {
		t.Fatalf("%d reads in 1 s, want 2", reads)
	}
	b.Round(session.RoundReport{}) // news: read again at once
	b.Status()
	if reads != 3 {
		t.Fatalf("%d reads after a round, want 3", reads)
	}
}

// shot draws a screenshot: white, a plot area of the page's background
// colour, and (if curve) a 3-px line of the curve colour across it.
func shot(t *testing.T, curve bool) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 400, 300))
	fill := func(x0, x1, y0, y1 int, c [3]uint8) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				copy(img.Pix[img.PixOffset(x, y):], []uint8{c[0], c[1], c[2], 0xff})
			}
		}
	}
	fill(0, 400, 0, 300, [3]uint8{0xff, 0xff, 0xff})
	fill(40, 360, 50, 200, plotBackground)
	// The legend swatch sits below the plot area in any case.
	fill(40, 58, 220, 223, curveRGB)
	if curve {
		for x := 50; x < 330; x++ {
			y := 150 - (x-50)/8
			fill(x, x+1, y, y+3, curveRGB)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheckPage(t *testing.T) {
	dom := []byte(`<table><tbody><tr class="round kept"><td>1</td></tr><tr class="round dropped"><td>1</td></tr></tbody></table>` +
		`<svg><path class="curve" data-series="validation accuracy" d="M68.0 120.5 L300.0 100.0 L600.0 90.0" fill="none"></path></svg>`)
	c, err := CheckPage(dom, shot(t, true), 2)
	if err != nil || c.Rows != 2 || c.CurvePoints != 3 || c.CurvePixels != 3*280 {
		t.Fatalf("good page: %v (%s)", err, c)
	}
	// Negative controls: no curve in the picture (the legend swatch alone
	// does not count), no rows, no path.
	if c, err := CheckPage(dom, shot(t, false), 2); err == nil || c.CurvePixels != 0 {
		t.Fatalf("a plot without its curve passed: %s", c)
	}
	noRows := bytes.ReplaceAll(dom, []byte(`class="round `), []byte(`class="x `))
	if _, err := CheckPage(noRows, shot(t, true), 1); err == nil {
		t.Fatal("a page without round rows passed")
	}
	noPath := bytes.ReplaceAll(dom, []byte(`<path class="curve"`), []byte(`<path class="axis"`))
	if _, err := CheckPage(noPath, shot(t, true), 1); err == nil {
		t.Fatal("a page without the curve path passed")
	}
	if _, err := CheckPage(dom, []byte("not a png"), 1); err == nil {
		t.Fatal("garbage screenshot passed")
	}
}
