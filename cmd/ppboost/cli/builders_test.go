package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// The config builders are pure (flags + --config file + defaults -> a
// validated setup; they read only the named files), so their precedence is
// table-tested here without starting a node: default < config file <
// explicit flag, and every bad value's error names the flag (or the file
// and the key it came from).

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// userArgs are the flags every `ppboost user` needs.
var userArgs = []string{"--key", "k", "--state", "s", "--data", "v.csv", "--model", "m.json"}

func TestBuildUserPrecedence(t *testing.T) {
	file := writeConfig(t, `{"boost": {"rounds": 7, "epsilon": 3, "owners_per_round": 9}, "sum": {"method": "ring"},
		"join_timeout": "1m", "announce_interval": "2s", "status": "127.0.0.1:0"}`)
	def, tdef := boost.DefaultConfig(), session.DefaultTiming()
	for _, tc := range []struct {
		name   string
		args   []string
		rounds int
		eps    float64
		h      int
		method string
		join   time.Duration
		every  time.Duration
		status string
	}{
		{"defaults", nil, def.Rounds, def.Epsilon, 5, securesum.DefaultParams().Method, tdef.JoinTimeout, tdef.AnnounceInterval, ""},
		{"flags", []string{"--rounds", "4", "--eps", "2", "--securesum", "ring", "--join-timeout", "3s"}, 4, 2, 5, "ring", 3 * time.Second, tdef.AnnounceInterval, ""},
		{"file", []string{"--config", file}, 7, 3, 9, "ring", time.Minute, 2 * time.Second, "127.0.0.1:0"},
		{"flag over file", []string{"--config", file, "--rounds", "8", "--join-timeout", "5s", "--status", "127.0.0.1:1"}, 8, 3, 9, "ring", 5 * time.Second, 2 * time.Second, "127.0.0.1:1"},
		// With a file, a flag left at its default does not undo the file.
		{"unset flag keeps file", []string{"--config", file, "--eps", "4"}, 7, 4, 9, "ring", time.Minute, 2 * time.Second, "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildUser(append(append([]string{}, userArgs...), tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c := s.cfg
			if c.Boost.Rounds != tc.rounds || c.Boost.Epsilon != tc.eps || c.Boost.OwnersPerRound != tc.h || c.Sum.Method != tc.method ||
				c.Timing.JoinTimeout != tc.join || c.Timing.AnnounceInterval != tc.every || s.status.addr != tc.status {
				t.Fatalf("got rounds %d eps %v H %d method %s join %v every %v status %q",
					c.Boost.Rounds, c.Boost.Epsilon, c.Boost.OwnersPerRound, c.Sum.Method, c.Timing.JoinTimeout, c.Timing.AnnounceInterval, s.status.addr)
			}
			// The result is what the constructor validates (the runner
			// adds the data).
			c.Own = tinyUserData()
			if err := c.Validate(); err != nil {
				t.Fatalf("built config does not validate: %v", err)
			}
		})
	}
}

func tinyUserData() *dataset.Dataset {
	return &dataset.Dataset{X: [][]float64{{-0.5}, {0.5}}, Y: []int{0, 1}, Classes: []string{"a", "b"}, Features: []string{"f"}}
}

func TestBuildUserBadValuesNameTheFlag(t *testing.T) {
	file := writeConfig(t, `{"boost": {"rounds": 0}}`)
	badDur := writeConfig(t, `{"share_timeout": "soon"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds:"},
		{[]string{"--eps", "-1"}, "--eps:"},
		{[]string{"--owners-per-round", "0"}, "--owners-per-round:"},
		{[]string{"--max-attempts", "0"}, "--max-attempts:"},
		{[]string{"--learner", "tree"}, "--learner:"},
		{[]string{"--alpha", "guess"}, "--alpha:"},
		{[]string{"--thresholds", "random"}, "--thresholds:"},
		{[]string{"--mechanism", "gauss"}, "--mechanism:"},
		{[]string{"--privacy", "none"}, "--privacy:"},
		{[]string{"--alpha", "securesum", "--err-eps", "0"}, "--err-eps:"},
		{[]string{"--securesum", "tree"}, "--securesum:"},
		{[]string{"--committee", "0"}, "--committee:"},
		{[]string{"--threshold", "99"}, "--threshold:"},
		{[]string{"--sum-timeout", "0s"}, "--sum-timeout:"},
		{[]string{"--sum-max-wait", "-1s"}, "--sum-max-wait:"},
		{[]string{"--join-timeout", "0s"}, "--join-timeout:"},
		{[]string{"--share-timeout", "-1s"}, "--share-timeout:"},
		{[]string{"--expect-owners", "2"}, "--expect-owners 2"},
		{[]string{"--expect-owners", "-1"}, "--expect-owners -1"},
		{[]string{"--progress", "loud"}, "--progress"},
		{[]string{"--config", file}, "--config " + file + ": boost.rounds:"},
		{[]string{"--config", file, "--rounds", "0"}, "--rounds:"},
		{[]string{"--config", badDur}, badDur + ": share_timeout:"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := buildUser(append(append([]string{}, userArgs...), tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if _, err := buildUser([]string{"--key", "k", "--state", "s"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Fatalf("missing --data: %v", err)
	}
}

const testUserID = "12D3KooWLZ9ydwXt6wRz8nJj4EB4k5oQ6fZ8pkLDHjtj1cVqExyu"

func TestBuildOwnerPrecedence(t *testing.T) {
	base := []string{"--data", "d.csv", "--key", "k", "--state", "s", "--user", testUserID}
	file := writeConfig(t, `{"eps": 3, "budget": 9, "no_ring": true, "colluders": "2", "allow-none": true}`)
	for _, tc := range []struct {
		name      string
		args      []string
		eps       float64
		budget    float64
		noRing    bool
		colluders int
		allowNone bool
	}{
		{"defaults", nil, session.DefaultOwnerMaxEpsilon, 5, false, 0, false},
		{"flags", []string{"--eps", "2", "--colluders", "3"}, 2, 5, false, 3, false},
		{"file", []string{"--config", file}, 3, 9, true, 2, true},
		{"flag over file", []string{"--config", file, "--eps", "1", "--budget", "4", "--colluders", "all"}, 1, 4, true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c := s.cfg
			if c.MaxEpsilon != tc.eps || s.budget != tc.budget || c.NoRing != tc.noRing || c.Colluders != tc.colluders ||
				c.AllowNone != tc.allowNone || (c.AllowNone && c.NoneCharge != tc.eps) || string(c.User) != testUserID {
				t.Fatalf("got %+v budget %v", c, s.budget)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--eps", "0"}, "--eps"},
		{[]string{"--budget", "-1"}, "--budget"},
		{[]string{"--user", "notapeer"}, "--user"},
		{[]string{"--colluders", "0"}, "colluders"},
		{[]string{"--config", writeConfig(t, `{"eps": "lots"}`)}, `"eps"`},
		{[]string{"--config", writeConfig(t, `{"epsilon": 1}`)}, `"epsilon" is not a flag`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := buildOwner(append(append([]string{}, base...), tc.args...), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestBuildTestnet(t *testing.T) {
	s, err := buildTestnet(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.owners != 300 || s.cfg.OwnersPerRound != 60 || s.cfg.Learner != boost.LogReg || s.sum.Method != securesum.Ring {
		t.Fatalf("defaults: %+v", s)
	}
	if s, err := buildTestnet([]string{"--privacy", "distributed"}, io.Discard); err != nil || s.sum.Method != securesum.Shamir {
		t.Fatalf("distributed privacy defaults to shamir: %v", err)
	}
	if s, err := buildTestnet([]string{"--privacy", "distributed", "--securesum", "ring"}, io.Discard); err != nil || s.sum.Method != securesum.Ring {
		t.Fatalf("an explicit --securesum wins: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds:"},
		{[]string{"--eps", "0"}, "--eps:"},
		{[]string{"--securesum", "tree"}, "--securesum:"},
		{[]string{"--owners", "10"}, "owners-per-round x rounds"},
	} {
		if _, err := buildTestnet(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestBuildDPBoostAndFed(t *testing.T) {
	s, err := buildDPBoost([]string{"--data", "synthetic", "--samples", "400", "--method", "dpboost", "--trees", "7", "--lambda", "0.5"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if def := dpboost.DefaultConfig(); s.cfg.Trees != 7 || s.cfg.Lambda != 0.5 || s.cfg.Depth != def.Depth || s.cfg.EnsembleSize != 7 {
		t.Fatalf("dpboost: flags over defaults: %+v", s.cfg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trees", "-1"}, "--trees"},
		{[]string{"--holdout", "0"}, "--holdout"},
		{[]string{"--method", "forest"}, "--method"},
		{[]string{"--method", "dpboost", "--trees", "10", "--ensemble-size", "11"}, "--ensemble-size"},
	} {
		if _, err := buildDPBoost(append([]string{"--data", "synthetic", "--samples", "400"}, tc.args...), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dpboost %v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	f, err := buildFed([]string{"--data", "synthetic", "--samples", "2000", "--method", "np", "--trees", "4", "--owners", "20"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.pub.Boost.Trees != 4 || len(f.parts) != 20 || f.pub.Noise {
		t.Fatalf("fed: %d trees, %d owners, noise %v", f.pub.Boost.Trees, len(f.parts), f.pub.Noise)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trees", "-3"}, "--trees"},
		{[]string{"--method", "para"}, "--method"},
		{[]string{"--owners", "100000"}, "--owners"},
		{[]string{"--method", "dpboost", "--ensemble-size", "0"}, "--ensemble-size:"},
		{[]string{"--depth", "0"}, "--depth:"},
		{[]string{"--lr", "2"}, "--lr:"},
	} {
		if _, err := buildFed(append([]string{"--data", "synthetic", "--samples", "2000"}, tc.args...), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fed %v: got %v, want %q", tc.args, err, tc.want)
		}
	}
}
