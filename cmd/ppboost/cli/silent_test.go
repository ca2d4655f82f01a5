package cli

import (
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// outsiderEnv makes the re-executed test binary an outsider process
// (runOutsiders) instead of a ppboost command.
const outsiderEnv = "PPBOOST_TEST_OUTSIDERS"

// runOutsiders is an outsider process: -n libp2p ids (one host each, all in
// this one process) that bootstrap to the data user, read its public
// Announce, Join at once with the announced schema digest, and then never
// answer anything (the user's LiveCheck included). It prints one line per
// Join and runs until SIGTERM.
func runOutsiders(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("outsiders", flag.ContinueOnError)
	n := fs.Int("n", 20, "outsider ids")
	boot := fs.String("bootstrap", "", "the data user's multiaddr with /p2p/<id>")
	dir := fs.String("dir", "", "directory for the outsiders' keys")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ai, err := peer.AddrInfoFromString(*boot)
	if err != nil {
		fmt.Fprintln(out, "outsiders:", err)
		return 2
	}
	user := protocol.PeerID(ai.ID.String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var mu sync.Mutex
	joined := 0
	var hosts []*node.Host
	defer func() {
		for _, h := range hosts {
			h.Close()
		}
	}()
	for i := 0; i < *n; i++ {
		key := filepath.Join(*dir, fmt.Sprintf("outsider%d.key", i))
		if _, err := node.GenerateKey(key); err != nil {
			fmt.Fprintln(out, "outsiders:", err)
			return 1
		}
		cfg := node.DefaultConfig()
		cfg.KeyFile, cfg.ListenAddrs, cfg.Bootstrap = key, []string{"/ip4/127.0.0.1/tcp/0"}, []string{*boot}
		h, err := node.New(ctx, cfg)
		if err != nil {
			fmt.Fprintln(out, "outsiders:", err)
			return 1
		}
		hosts = append(hosts, h)
		var once sync.Once
		id := i
		h.SetHandler(func(m protocol.Message) {
			env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil || m.From != user || env.GetAnnounce() == nil {
				return // LiveCheck, Select, Roster, ...: never answered
			}
			once.Do(func() {
				go func() {
					nonce := make([]byte, session.NonceBytes)
					crand.Read(nonce)
					b, err := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: env.GetHeader().GetSession(), Seq: 1},
						Body: &wire.Envelope_Join{Join: &wire.Join{SchemaDigest: env.GetAnnounce().GetConfig().GetSchemaDigest(), Nonce: nonce}}},
						wire.MaxControlBytes)
					if err != nil {
						return
					}
					sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					if err := h.Send(sctx, user, wire.ProtoSession, b); err != nil {
						fmt.Fprintf(out, "outsider %d: join: %v\n", id, err)
						return
					}
					mu.Lock()
					joined++
					fmt.Fprintf(out, "outsider %d joined (%d joined)\n", id, joined)
					mu.Unlock()
				}()
			})
		})
		if err := h.Join(wire.TopicControl); err != nil {
			fmt.Fprintln(out, "outsiders:", err)
			return 1
		}
	}
	<-ctx.Done()
	return 0
}

// TestOpenSessionOutlivesSilentOutsiderProcesses is issue 31 item 4 with
// real processes on libp2p over loopback: a data user (`ppboost user
// --expect-owners 20`, an open session), one outsider process holding 20
// libp2p ids that read the Announce and Join at once and then never answer
// anything, and, 4 s after the 20th Join, 5 honest `ppboost owner`
// processes. The outsiders fill the expected count, so the rounds start
// without the owners. Before the fix the owners were turned away and the
// user spent its 10 attempts on silent outsiders and failed; now the owners
// join after the start, echo the user's liveness check and enter roster
// version 2, selection prefers them, and the session completes with every
// process exiting 0.
func TestOpenSessionOutlivesSilentOutsiderProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("7 processes and 25 libp2p hosts: skipped under -short")
	}
	begin := time.Now()
	const honest, outsiders = 5, 20
	s := newSessionDir(t, honest, nil)
	user := s.startUser(t, "--expect-owners", fmt.Sprint(outsiders), "--mechanism", "none", "--alpha", "validation",
		"--rounds", "2", "--owners-per-round", "1", "--max-attempts", "10", "--share-timeout", "2s")
	out := startProcEnv(t, "outsiders", outsiderEnv+"=1", "-n", fmt.Sprint(outsiders),
		"-bootstrap", s.addr+"/p2p/"+s.userID, "-dir", t.TempDir())
	deadline := time.Now().Add(40 * time.Second)
	for !strings.Contains(out.log.String(), fmt.Sprintf("(%d joined)", outsiders)) {
		if time.Now().After(deadline) {
			t.Fatalf("the outsiders did not all join within 40 s; their log:\n%s\nuser log:\n%s", out.log, user.log)
		}
		select {
		case <-user.done:
			t.Fatalf("the user exited (%d) before the outsiders joined; log:\n%s", user.code, user.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("%d outsider ids joined %.1f s after the user started", outsiders, time.Since(begin).Seconds())
	time.Sleep(4 * time.Second)
	owners := make([]*proc, honest)
	for i := range owners {
		owners[i] = s.startOwner(t, i, "--allow-none")
	}
	code := user.wait(t, 90*time.Second)
	rounds := regexp.MustCompile(`round \d+ attempt \d+: \d+/\d+ owners answered`).FindAllString(user.log.String(), -1)
	for _, r := range rounds {
		t.Log(r)
	}
	if code != exitOK {
		t.Fatalf("user exit %d, want %d (complete); outcome %q; log:\n%s", code, exitOK, endedWith(user), user.log)
	}
	if !strings.Contains(user.log.String(), "roster grown") {
		t.Errorf("the user never grew its roster; log:\n%s", user.log)
	}
	for _, o := range owners {
		if c := o.wait(t, 30*time.Second); c != exitOK {
			t.Fatalf("%s: exit %d, outcome %q; log:\n%s", o.name, c, endedWith(o), o.log)
		}
	}
	silent := 0
	for _, r := range rounds {
		if strings.Contains(r, ": 0/") {
			silent++
		}
	}
	t.Logf("complete: %q; %d attempts, %d without an answer; %.1f s wall time", endedWith(user), len(rounds), silent, time.Since(begin).Seconds())
}
