package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/store"
)

// `ppboost owner --fed`: the federated role's configuration comes from the
// owner's own flags unless --fed-user / --fed-eps say otherwise; without
// --fed there is no second role and its flags are refused.
func TestBuildOwnerFed(t *testing.T) {
	base := []string{"--data", "d.csv", "--key", "k", "--state", "s", "--user", testUserID, "--eps", "2"}
	const other = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"
	for _, tc := range []struct {
		name      string
		args      []string
		fed       bool
		user      string
		eps       float64
		allowNone bool
		colluders int
	}{
		{"no fed", nil, false, "", 0, false, 0},
		{"fed defaults", []string{"--fed"}, true, testUserID, 2, false, 0},
		{"fed flags", []string{"--fed", "--fed-user", other, "--fed-eps", "0.5", "--allow-none", "--colluders", "2"}, true, other, 0.5, true, 2},
		{"fed in file", []string{"--config", writeConfig(t, `{"fed": true, "fed-eps": 3}`)}, true, testUserID, 3, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if (s.fed != nil) != tc.fed {
				t.Fatalf("fed role %v, want %v", s.fed != nil, tc.fed)
			}
			if !tc.fed {
				return
			}
			f := s.fed
			if string(f.User) != tc.user || f.MaxEpsilon != tc.eps || f.AllowNoNoise != tc.allowNone || f.Colluders != tc.colluders ||
				(f.AllowNoNoise && f.NoneCharge != tc.eps) {
				t.Fatalf("fed config %+v", f)
			}
			// What the runner adds makes it valid.
			c := *f
			c.Data, c.Ledger = tinyUserData(), protocol.NewMemLedger(10)
			if err := c.Validate(); err != nil {
				t.Fatalf("built fed config does not validate: %v", err)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fed-user", other}, "--fed-user needs --fed"},
		{[]string{"--fed-eps", "1"}, "--fed-eps needs --fed"},
		{[]string{"--fed", "--fed-user", "nope"}, "--fed-user"},
		{[]string{"--fed", "--fed-eps", "-1"}, "--fed-eps"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestBuildFedUser(t *testing.T) {
	base := []string{"--key", "k", "--data", "v.csv", "--max-rows", "40", "--roster", testUserID}
	for _, tc := range []struct {
		name   string
		args   []string
		method dpboost.Method
		trees  int
		lambda float64
		rule   bool
	}{
		{"defaults", nil, dpboost.DPBoost, 10, 1, false},
		{"np", []string{"--method", "np", "--trees", "3"}, dpboost.NP, 3, 1, false},
		{"newton rule", []string{"--method", "newton"}, dpboost.Newton, dpboost.NewtonRule(1, 40, 2).Trees, 1, true},
		{"newton lambda", []string{"--method", "newton", "--lambda", "5", "--trees", "7"}, dpboost.Newton, 7, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildFedUser(append(append([]string{}, base...), tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if s.boost.Method != tc.method || s.boost.Trees != tc.trees || s.boost.Lambda != tc.lambda || s.lambdaRule != tc.rule ||
				!strings.HasPrefix(s.session, "fed-") {
				t.Fatalf("got %+v", s)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--roster", "x"}, "--roster"},
		{[]string{"--roster", testUserID + "," + testUserID}, "listed twice"},
		{[]string{"--max-rows", "0"}, "--max-rows"},
		{[]string{"--method", "xgboost"}, "--method"},
		{[]string{"--lambda", "-1"}, "--lambda"},
		{[]string{"--depth", "99"}, "Depth"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := buildFedUser(append(append([]string{}, base...), tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if _, err := buildFedUser([]string{"--key", "k", "--data", "v.csv"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--roster") {
		t.Fatalf("missing --roster: %v", err)
	}
	// The announced configuration needs two classes and a schema.
	s, err := buildFedUser(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := &dataset.Dataset{X: [][]float64{{-0.5}, {0.5}}, Y: []int{0, 1}, Classes: []string{"a", "b"}, Features: []string{"f"}}
	if _, err := s.public(d); err == nil || !strings.Contains(err.Error(), "public schema") {
		t.Fatalf("no schema: %v", err)
	}
}

// An owner serving two roles exits with the worse of their statuses.
func TestWorseExit(t *testing.T) {
	partial := protocol.Outcome{Kind: protocol.OutcomePartial}.Err()
	failed := protocol.Outcome{Kind: protocol.OutcomeFailed}.Err()
	refused := refusedError{errors.New("no announcement")}
	for _, c := range []struct {
		a, b error
		want int
	}{
		{nil, nil, exitOK}, {nil, partial, exitPartial}, {partial, nil, exitPartial}, {partial, refused, exitRefused},
		{refused, partial, exitRefused}, {refused, failed, exitError}, {failed, partial, exitError}, {nil, failed, exitError},
	} {
		got := exitOK
		if err := worse(c.a, c.b); err != nil {
			got = exitCode(err)
		}
		if got != c.want {
			t.Errorf("worse(%v, %v): exit %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// One ledger serves both roles of a host: every system's spend is recorded
// under a key that names its session (W&C <session> and
// <session>/err/<r>/<a>, federated <session>/ensemble-<e>), the lifetime
// budget covers them together, and a key that two sessions would share
// (a user choosing another system's session id) is refused the second time:
// a collision can deny a release, never let one leave uncharged.
func TestOneLedgerForTwoSystems(t *testing.T) {
	l, err := store.OpenLedger(filepath.Join(t.TempDir(), "ledger.jsonl"), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, key := range []string{"wc1", "wc1/err/1/0", "fed1/ensemble-0", "fed1/ensemble-1"} {
		if err := l.Spend(key, 1, 0, 0.5); err != nil {
			t.Fatalf("spend %s: %v", key, err)
		}
	}
	if l.Spent() != 2 {
		t.Fatalf("spent %v, want 2 (both systems on one budget)", l.Spent())
	}
	if err := l.Spend("fed1/ensemble-0", 1, 0, 0.5); !errors.Is(err, protocol.ErrAlreadyContributed) {
		t.Fatalf("a key spent by another session: %v", err)
	}
	if err := l.Spend("wc2", 1, 0, 1.5); !errors.Is(err, protocol.ErrBudgetExceeded) {
		t.Fatalf("over the shared budget: %v", err)
	}
	if err := l.Spend("wc2", 1, 0, 1); err != nil { // the control: what is left is spendable
		t.Fatal(err)
	}
}

// `ppboost owner --pfds`: the PFDS role's announcer defaults to --user and
// its session cap to --eps (at most --session-eps-max); its flags need
// --pfds, and bad values are refused naming the flag. The config file
// enables it as the command line does.
func TestBuildOwnerPFDS(t *testing.T) {
	base := []string{"--data", "d.csv", "--key", "k", "--state", "s", "--user", testUserID, "--eps", "2"}
	const other = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"
	model := filepath.Join(t.TempDir(), "pfds.json")
	for _, tc := range []struct {
		name      string
		args      []string
		on        bool
		announcer string
		eps       float64
		lambda    float64
		model     string
	}{
		{"no pfds", nil, false, "", 0, 0, ""},
		{"pfds defaults", []string{"--pfds"}, true, testUserID, 2, 1e-3, ""},
		{"pfds flags", []string{"--pfds", "--pfds-announcer", other, "--pfds-eps", "0.5", "--pfds-lambda", "0.01", "--pfds-model", model}, true, other, 0.5, 0.01, model},
		{"session cap", []string{"--pfds", "--session-eps-max", "1.5"}, true, testUserID, 1.5, 1e-3, ""},
		{"pfds in file", []string{"--config", writeConfig(t, `{"pfds": true, "pfds-eps": 3, "fed": true}`)}, true, testUserID, 3, 1e-3, ""},
		{"pfds alone", []string{"--config", writeConfig(t, `{"pfds": true, "wc": false}`)}, true, testUserID, 2, 1e-3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if (s.pfds != nil) != tc.on {
				t.Fatalf("pfds role %v, want %v", s.pfds != nil, tc.on)
			}
			if !tc.on {
				return
			}
			p := s.pfds
			if string(p.announcer) != tc.announcer || p.maxEps != tc.eps || p.lambda != tc.lambda || p.model != tc.model {
				t.Fatalf("pfds config %+v", p)
			}
		})
	}
	if s, err := buildOwner(append(append([]string{}, base...), "--pfds", "--wc=false"), io.Discard); err != nil || !s.noWC || s.pfds == nil {
		t.Fatalf("--pfds --wc=false: %v, %+v", err, s)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pfds-announcer", other}, "--pfds-announcer needs --pfds"},
		{[]string{"--pfds-model", model}, "--pfds-model needs --pfds"},
		{[]string{"--pfds", "--pfds-announcer", "nope"}, "--pfds-announcer"},
		{[]string{"--pfds", "--pfds-eps", "-1"}, "--pfds-eps"},
		{[]string{"--pfds", "--pfds-lambda", "-1"}, "--pfds-lambda"},
		{[]string{"--pfds", "--pfds-model", "/no/such/dir/m.json"}, "--pfds-model /no/such/dir/m.json: directory /no/such/dir does not exist"},
		{[]string{"--config", writeConfig(t, `{"pfds-lambda": 1}`)}, "--pfds-lambda needs --pfds"},
		{[]string{"--wc=false"}, "--wc=false leaves no system to serve"},
		{[]string{"--wc=false", "--pfds", "--status", "127.0.0.1:0"}, "--status shows the W&C session, and --wc=false runs none"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// `ppboost owner --fed --pfds`: six owner processes, each ONE libp2p host
// serving a W&C owner, a federated DPBoost owner and a PFDS agent through a
// protocol.Mux, a `ppboost user`, a `ppboost fed-user` and a `ppboost pfds
// announce`. Every owner bootstraps only to the two users and the
// announcer: W&C owners find each other through the roster's Join
// addresses, federated owners through the FedConfig's roster_addrs, PFDS
// messages travel through the announcer. The three sessions complete;
// every owner logs the three outcomes, exits 0, writes its PFDS predictor
// and its one ledger holds the three systems' spends (skipped under
// -short).
func TestOwnerServesThreeSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("9 processes on libp2p: skipped under -short")
	}
	const owners = 6
	s := newSessionDir(t, owners, nil)
	fedKey := filepath.Join(s.dir, "fed-user.key")
	fedID := seededKey(t, fedKey, t.Name()+"/fed-user").String()
	fedAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))
	annKey := filepath.Join(s.dir, "announcer.key")
	annID := seededKey(t, annKey, t.Name()+"/announcer").String()
	annAddr := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))
	var ids []string
	for i := range owners {
		key := filepath.Join(s.dir, fmt.Sprintf("owner%d.key", i))
		ids = append(ids, seededKey(t, key, fmt.Sprintf("%s/owner/%d", t.Name(), i)).String())
	}
	user := s.startUser(t, "--expect-owners", fmt.Sprint(owners), "--mechanism", "none", "--eps", "1", "--rounds", "2", "--owners-per-round", "2")
	fedModel := filepath.Join(s.dir, "fed-model.json")
	fed := startProc(t, "fed-user", "fed-user", "--key", fedKey, "--listen", fedAddr, "--data", filepath.Join(s.shards, "validation.csv"),
		"--roster", strings.Join(ids, ","), "--max-rows", "40", "--method", "np", "--trees", "2", "--depth", "2",
		"--model", fedModel, "--log-json")
	// The announcer lingers while the agents relay through it; the test's
	// cleanup ends it.
	startProc(t, "announcer", "pfds", "announce", "--key", annKey, "--listen", annAddr, "--roster", strings.Join(ids, ","),
		"--data", "csv:"+filepath.Join(s.shards, "validation.csv"), "--eps", "1", "--timeout", "30s", "--linger", "5m")
	procs := make([]*proc, owners)
	boot := strings.Join([]string{s.addr + "/p2p/" + s.userID, fedAddr + "/p2p/" + fedID, annAddr + "/p2p/" + annID}, ",")
	for i := range owners {
		procs[i] = s.startOwner(t, i, "--allow-none", "--eps", "1", "--budget", "10", "--fed", "--fed-user", fedID,
			"--pfds", "--pfds-announcer", annID, "--pfds-model", filepath.Join(s.dir, fmt.Sprintf("pfds-%d.json", i)),
			"--bootstrap", boot) // the users only: no owner's address
	}
	if c := user.wait(t, 3*time.Minute); c != exitOK {
		t.Fatalf("user exit %d; log:\n%s", c, user.log)
	}
	if c := fed.wait(t, 3*time.Minute); c != exitOK {
		t.Fatalf("fed-user exit %d; log:\n%s", c, fed.log)
	}
	m, err := dpboost.LoadModel(fedModel)
	if err != nil || len(m.Boosters[0]) != 2 {
		t.Fatalf("federated model: %v", err)
	}
	wcSpends := 0
	for i, p := range procs {
		if c := p.wait(t, time.Minute); c != exitOK {
			t.Fatalf("%s: exit %d; log:\n%s", p.name, c, p.log)
		}
		ended := outcomesLogged(p)
		if len(ended) != 3 || ended["owner"] != "complete: 2 of 2 rounds" || !strings.HasPrefix(ended["owner.fed"], "complete: 2 of 2") ||
			ended["owner.pfds"] != fmt.Sprintf("complete: %d of %d shares", owners, owners) {
			t.Fatalf("%s logged outcomes %v; log:\n%s", p.name, ended, p.log)
		}
		if f, err := os.Open(filepath.Join(s.dir, fmt.Sprintf("pfds-%d.json", i))); err != nil {
			t.Fatalf("%s: PFDS predictor: %v", p.name, err)
		} else if _, err := bp.ReadModelFile(f, f.Name()); err != nil {
			f.Close()
			t.Fatalf("%s: PFDS predictor: %v", p.name, err)
		} else {
			f.Close()
		}
		keys := ledgerKeys(t, filepath.Join(s.dir, fmt.Sprintf("owner%d-state", i), "ledger.jsonl"))
		fedSpends, pfdsSpends := 0, 0
		for _, k := range keys {
			switch {
			case strings.Contains(k, "/ensemble-"):
				fedSpends++
			case strings.HasPrefix(k, "pfds-"):
				pfdsSpends++
			default:
				wcSpends++
			}
		}
		if fedSpends == 0 || pfdsSpends != 1 {
			t.Fatalf("%s: %d federated and %d PFDS spends in its ledger %v, want some and 1", p.name, fedSpends, pfdsSpends, keys)
		}
	}
	if wcSpends != 4 { // 2 rounds x 2 owners, mechanism none charged --eps
		t.Fatalf("%d W&C spends in the owners' ledgers, want 4", wcSpends)
	}
	t.Logf("three sessions complete on %d three-role owner hosts bootstrapped only to the users; W&C spends %d", owners, wcSpends)
}

// outcomesLogged maps each logger name (owner, owner.fed, owner.pfds) to the outcome it
// logged ("session ended: TEXT").
func outcomesLogged(p *proc) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(p.log.String(), "\n") {
		var l struct {
			Module  string `json:"@module"`
			Message string `json:"@message"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Message, "session ended: ") {
			out[l.Module] = strings.TrimPrefix(l.Message, "session ended: ")
		}
	}
	return out
}

func ledgerKeys(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Session string `json:"session"`
			Bind    string `json:"bind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Bind != "" {
			continue // a release name bound to its value: no spend
		}
		keys = append(keys, e.Session)
	}
	return keys
}
