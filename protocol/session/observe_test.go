package session

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

func TestCutReason(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2 bytes a rune
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "epsilon 5 above this owner's limit 1", "epsilon 5 above this owner's limit 1"},
		{"control characters", "a\nb\x1b[2Jc\x7f", "a b [2Jc "},
		{"invalid UTF-8", "a\xff\xfeb", "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CutReason(tc.in); got != tc.want {
				t.Fatalf("CutReason(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	got := CutReason(long)
	if len(got) > SnapshotMaxReasonBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("cut of a long reason: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	// Negative control: a reason at the bound is kept whole.
	at := strings.Repeat("x", SnapshotMaxReasonBytes)
	if CutReason(at) != at {
		t.Fatal("a reason at the bound was cut")
	}
}

// Outsiders can refuse an open session with as many ids and reasons as they
// like: the user holds them (bounded by maxJoiners), and a snapshot returns
// at most SnapshotMaxReasons of them, each cut, with every refusal counted.
func TestSnapshotBoundsRefusals(t *testing.T) {
	c := newCluster(t, 6, nil)
	c.open = true
	c.startUser(t, nil)
	const strangers, same = 3000, 1200
	for i := 0; i < strangers; i++ {
		reason := fmt.Sprintf("<script>alert(%d)</script>%s", i, strings.Repeat("y", i%700))
		if i < same {
			reason = "schema digest differs"
		}
		env := &wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: "hand", Seq: 1},
			Body: &wire.Envelope_Refuse{Refuse: &wire.Refuse{Reason: reason}}}
		data, err := wire.Marshal(env, wire.MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		c.user.Handle(protocol.Message{From: protocol.PeerID(fmt.Sprintf("stranger-%04d", i)), Protocol: wire.ProtoSession, Data: data})
	}
	s := c.user.Snapshot()
	if s.State != UserJoining || s.NotJoinedTotal != strangers {
		t.Fatalf("state %s, %d refusals held, want %d", s.State, s.NotJoinedTotal, strangers)
	}
	if len(s.NotJoined) != SnapshotMaxReasons {
		t.Fatalf("%d reasons in the snapshot, want %d", len(s.NotJoined), SnapshotMaxReasons)
	}
	total := 0
	for _, r := range s.NotJoined {
		total += r.Count
		if len(r.Reason) > SnapshotMaxReasonBytes {
			t.Fatalf("reason of %d bytes", len(r.Reason))
		}
	}
	if total != strangers || s.NotJoined[0] != (ReasonCount{"schema digest differs", same}) ||
		s.NotJoined[SnapshotMaxReasons-1].Reason != "other reasons" {
		t.Fatalf("reasons %v (sum %d)", s.NotJoined[:2], total)
	}
	// One by one: the first SnapshotMaxPeers refusers by id.
	if len(s.Peers) != SnapshotMaxPeers || s.Peers[0].ID != "stranger-0000" || s.Peers[0].Joined ||
		s.Peers[0].Reason != "schema digest differs" || s.Peers[SnapshotMaxPeers-1].ID != fmt.Sprintf("stranger-%04d", SnapshotMaxPeers-1) {
		t.Fatalf("peers %v ... %v", s.Peers[0], s.Peers[len(s.Peers)-1])
	}
	// The session still runs: the owners join and train.
	c.run(time.Minute)
	if !c.done || c.err != nil || len(c.model.Rounds) != c.cfg.Rounds {
		t.Fatalf("session after the refusals: done %v, err %v", c.done, c.err)
	}
	if s := c.user.Snapshot(); s.State != UserDone || len(s.Ensemble.Rounds) != c.cfg.Rounds || s.Roster != 6 {
		t.Fatalf("final snapshot: %s, %d rounds, roster %d", s.State, len(s.Ensemble.Rounds), s.Roster)
	}
}

func TestKeepSmallest(t *testing.T) {
	var w []string
	for _, s := range []string{"m", "c", "x", "a", "q", "b", "z"} {
		w = keepSmallest(w, s, 3)
	}
	if strings.Join(w, ",") != "a,b,c" {
		t.Fatalf("window %v", w)
	}
	if w := keepSmallest(nil, "a", 0); len(w) != 0 {
		t.Fatalf("window of 0: %v", w)
	}
}

// CutReason takes whatever an outsider sends: its result is valid UTF-8,
// bounded, free of control characters, and cutting it again changes nothing.
func FuzzCutReason(f *testing.F) {
	for _, s := range []string{"", "epsilon 5 above this owner's limit 1", "a\x00b\nc\x1b[2J", "\xff\xfe\xfd",
		strings.Repeat("é", 200), strings.Repeat("x", SnapshotMaxReasonBytes+1), "</script><img src=x onerror=alert(1)>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CutReason(s)
		if !utf8.ValidString(got) || len(got) > SnapshotMaxReasonBytes {
			t.Fatalf("CutReason(%q) = %q: %d bytes, valid %v", s, got, len(got), utf8.ValidString(got))
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character %U in %q", r, got)
			}
		}
		if again := CutReason(got); again != got {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
		if len(s) <= SnapshotMaxReasonBytes && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) && got != s {
			t.Fatalf("a clean short reason changed: %q -> %q", s, got)
		}
	})
}

// Every dropped attempt says why in its report (RoundReport.Why); a kept one
// says nothing. A significance level of 1e-300 asks for z above 37: no
// stump on 300 validation samples reaches it, so every attempt is dropped by
// the test, and the session fails when the attempts run out.
func TestRoundReportsSayWhyDropped(t *testing.T) {
	c := newCluster(t, 24, func(cfg *boost.Config, _ *securesum.Params) {
		cfg.Alpha, cfg.Significance = boost.AlphaValidation, 1e-300
	})
	var reports []RoundReport
	c.userCfg = func(u *UserConfig) { u.OnRound = func(r RoundReport) { reports = append(reports, r) } }
	c.startUser(t, nil)
	c.run(10 * time.Minute)
	if !c.done {
		t.Fatal("the session did not end")
	}
	dropped := 0
	for _, r := range reports {
		switch {
		case r.Accepted && r.Why != "":
			t.Fatalf("kept attempt with a reason: %+v", r)
		case !r.Accepted && !strings.HasPrefix(r.Why, "not significantly better than chance") && !strings.HasPrefix(r.Why, "alpha "):
			t.Fatalf("dropped attempt without its reason: %+v", r)
		case !r.Accepted:
			dropped++
		}
	}
	if dropped == 0 || dropped != len(reports) || c.err == nil {
		t.Fatalf("%d of %d attempts dropped, session error %v; want all dropped and a failed session", dropped, len(reports), c.err)
	}
}
