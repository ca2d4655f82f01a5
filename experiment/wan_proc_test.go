package experiment

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol/securesum"
)

func TestMain(m *testing.M) {
	// The multi-process WAN harness re-executes this test binary.
	if child, code := WANChild(); child {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// wanPIDs records the children a test starts.
func wanPIDs(t *testing.T) *[]int {
	var pids []int
	wanChildStarted = func(pid int) { pids = append(pids, pid) }
	t.Cleanup(func() { wanChildStarted = nil })
	return &pids
}

// gone fails unless every process of pids has exited and been reaped.
func gone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("child %d still there after the case (kill 0: %v)", pid, err)
		}
	}
}

// TestWANProcesses runs one case with its owners in two child processes
// and the same case in one process: every sum covers every owner, no child
// is left, and the wire bytes per owner agree with the one-process count
// (each byte is charged in the process that dialled its connection, so a
// count that missed the bytes sent back on connections dialled across
// processes would fall short by a large fraction).
func TestWANProcesses(t *testing.T) {
	pids := wanPIDs(t)
	c := wanCase{Transport: "tcp", Owners: 8, Method: securesum.Shamir, Delay: 20 * time.Millisecond, Warm: 2, Procs: 2}
	multi, err := runWANCase(context.Background(), c, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(*pids) != 2 {
		t.Fatalf("%d children started, want 2", len(*pids))
	}
	gone(t, *pids)
	c.Procs = -1
	single, err := runWANCase(context.Background(), c, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(*pids) != 2 {
		t.Fatalf("the one-process case started %d children", len(*pids)-2)
	}
	for _, r := range []wanResult{multi, single} {
		if len(r.Sums) != 3 {
			t.Fatalf("procs %d: %d sums, want 3", r.Procs, len(r.Sums))
		}
		for _, s := range r.Sums {
			if s.Err != "" || s.Parties != c.Owners {
				t.Errorf("procs %d: %+v: want all %d owners", r.Procs, s, c.Owners)
			}
			if s.ProtoSent <= 0 || s.WireBytes < s.ProtoSent {
				t.Errorf("procs %d: %+v: wire bytes below the protocol's", r.Procs, s)
			}
			if s.OwnerConns == 0 || s.CommitteePairs == 0 {
				t.Errorf("procs %d: %+v: no owner connections counted", r.Procs, s)
			}
		}
	}
	for i := 1; i < 3; i++ {
		m, s := multi.Sums[i].WireBytes, single.Sums[i].WireBytes
		t.Logf("warm sum %d: wire bytes per owner %.0f in two children, %.0f in one process", i, m, s)
		if m < 0.75*s || m > 1.33*s {
			t.Errorf("warm sum %d: %.0f wire bytes per owner across processes, %.0f in one", i, m, s)
		}
	}
}

// TestWANChildFailure: a child that cannot build its owners makes the case
// fail with an error naming the child and its own words, and no child is
// left behind.
func TestWANChildFailure(t *testing.T) {
	pids := wanPIDs(t)
	c := wanCase{Transport: "tcp", Owners: 4, Method: securesum.Shamir, Warm: 1, Procs: 2}
	spec := wanGroupSpec{Case: c, Seed: 1, UserID: "nobody", UserAddrs: []string{"not-an-address"}}
	w, _, err := startWANChildren(nil, spec, 2)
	if err == nil {
		w.close()
		t.Fatal("children with an unreachable user started")
	}
	if !strings.Contains(err.Error(), "wan child for owners ") || !strings.Contains(err.Error(), "not-an-address") {
		t.Errorf("error %q does not name the child and the cause", err)
	}
	if len(*pids) != 2 {
		t.Fatalf("%d children started, want 2", len(*pids))
	}
	gone(t, *pids)
}
