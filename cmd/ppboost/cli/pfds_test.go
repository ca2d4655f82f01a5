package cli

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/node"
)

func TestPFDSSim(t *testing.T) {
	var out, errOut bytes.Buffer
	// --force: PFDS on Adult at eps 1 does not beat the majority class
	// (RESULTS), which the check before spending refuses; this test is
	// about the protocol matching the reference.
	code := Main([]string{"pfds", "sim", "-agents", "8", "-hmax", "4", "-max-leaves", "64", "-eval", "2", "-protocol", "-force"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"8/8 agents hold exactly the reference's shares", "test error over the first 2 agents", "majority class"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPFDSUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pfds"}, "missing subcommand"},
		{[]string{"pfds", "nope"}, "unknown subcommand"},
		{[]string{"pfds", "sim", "-hmax", "0"}, "HMax"},
		{[]string{"pfds", "sim", "-learner", "linreg"}, "-learner"},
		{[]string{"pfds", "sim", "-split-attr", "shoe-size"}, "-split-attr"},
		{[]string{"pfds", "sim", "-test", "1.5"}, "-test"},
		{[]string{"pfds", "sim", "-variant", "x"}, "-variant"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(tc.args, &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, errOut.String(), tc.want)
		}
	}
}

func TestPFDSTestnet(t *testing.T) {
	if testing.Short() {
		t.Skip("libp2p hosts; skipped under -short")
	}
	var out, errOut bytes.Buffer
	code := Main([]string{"pfds", "testnet", "-agents", "4", "-hmax", "4", "-max-leaves", "64", "-eval", "2"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	if !strings.Contains(out.String(), "4/4 hold exactly the reference's shares") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestPFDSAgentAnnounce runs `pfds announce` and two `pfds agent` nodes as
// libp2p hosts in this process, each through Main.
func TestPFDSAgentAnnounce(t *testing.T) {
	if testing.Short() {
		t.Skip("libp2p hosts; skipped under -short")
	}
	dir := t.TempDir()
	key := func(name string) (string, string) {
		p := filepath.Join(dir, name+".key")
		id, err := node.GenerateKey(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, id.String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	annKey, annID := key("announcer")
	boot := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", port, annID)
	type result struct {
		code int
		out  string
		err  string
	}
	results := make(chan result, 4)
	run := func(args ...string) {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		results <- result{code, out.String(), errOut.String()}
	}
	var ids []string
	for i := 0; i < 2; i++ {
		k, id := key(fmt.Sprintf("agent-%d", i))
		ids = append(ids, id)
		go run("pfds", "agent", "-key", k, "-listen", "/ip4/127.0.0.1/tcp/0", "-bootstrap", boot, "-announcer", annID,
			"-shard", fmt.Sprintf("%d/20", i), "-ledger", filepath.Join(dir, fmt.Sprintf("agent-%d.ledger", i)), "-log-level", "warn")
	}
	// A third agent that is not on the roster refuses and exits 4.
	k, _ := key("agent-out")
	go run("pfds", "agent", "-key", k, "-listen", "/ip4/127.0.0.1/tcp/0", "-bootstrap", boot, "-announcer", annID,
		"-shard", "2/20", "-ledger", filepath.Join(dir, "agent-out.ledger"), "-log-level", "warn")
	go run("pfds", "announce", "-key", annKey, "-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port), "-roster", strings.Join(ids, ","),
		"-hmax", "4", "-max-leaves", "64", "-timeout", "10s", "-linger", "2s", "-log-level", "warn")
	done := 0
	for done < 4 {
		select {
		case r := <-results:
			done++
			if strings.Contains(r.err, "refused session") {
				if r.code != exitRefused || !strings.Contains(r.err, "not in the roster") {
					t.Errorf("the agent off the roster: exit %d: %s", r.code, r.err)
				}
				continue
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s\n%s", r.code, r.err, r.out)
			}
			if strings.Contains(r.out, "pfds agent") && !strings.Contains(r.out, "2 shares from 2 roster agents; ledger spent 1 of 1") {
				t.Errorf("agent output:\n%s", r.out)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("timed out")
		}
	}
}
