package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsageAndBadFlags(t *testing.T) {
	if code, out, _ := run("help"); code != 0 || !strings.Contains(out, "simulate") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, _ := run(); code != exitUsage {
		t.Fatalf("no command: exit %d", code)
	}
	cases := map[string][]string{
		"unknown command": {"frobnicate"},
		"unknown flag":    {"sim", "--nope"},
		"bad learner":     {"sim", "--learner", "tree"},
		"bad mechanism":   {"sim", "--mechanism", "gauss"},
		"bad eps":         {"sim", "--eps", "-1"},
		"positional":      {"sim", "extra"},
		"predict no args": {"predict"},
		"keygen no out":   {"keygen"},
		"bad securesum":   {"simulate", "--securesum", "tree"},
		"impossible user": {"user", "--key", "k", "--data", "v.csv", "--model", "m.json", "--state", "s",
			"--owners-per-round", "10", "--expect-owners", "6"},
		"owner user not a peer id": {"owner", "--data", "d.csv", "--key", "k", "--state", "s", "--user", "notapeerid"},
		"simulate bad drop":        {"simulate", "--drop", "1.5"},
	}
	for name, args := range cases {
		if code, _, errOut := run(args...); code != exitUsage || errOut == "" {
			t.Errorf("%s: exit %d, stderr %q", name, code, errOut)
		}
	}
	if code, _, errOut := run("sim", "--data", "csv:/nonexistent.csv"); code != exitError || !strings.Contains(errOut, "nonexistent.csv") {
		t.Errorf("missing data file: exit %d, %q", code, errOut)
	}
}

func TestSimPredictPartitionKeygen(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.json")
	code, out, errOut := run("sim", "--owners-per-round", "20", "--rounds", "3", "--samples-per-owner", "20",
		"--mechanism", "none", "--user-samples", "500", "--holdout", "1000", "--model", model, "--json")
	if code != 0 {
		t.Fatalf("sim: %d %s", code, errOut)
	}
	var rep struct {
		Rounds []struct{ Accepted bool }
		Final  struct{ Accuracy float64 }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Rounds) < 3 || rep.Final.Accuracy < 0.6 {
		t.Fatalf("sim JSON: %v %+v", err, rep)
	}
	code, out, errOut = run("predict", "--model", model, "--data", "synthetic", "--samples", "500")
	if code != 0 || !strings.Contains(out, "accuracy") || !strings.Contains(out, "confusion") {
		t.Fatalf("predict: %d %q %q", code, out, errOut)
	}
	shards := filepath.Join(dir, "shards")
	if code, _, errOut := run("partition", "--owners", "4", "--samples-per-owner", "30", "--user-samples", "100",
		"--holdout", "200", "--out", shards); code != 0 {
		t.Fatalf("partition: %s", errOut)
	}
	for _, f := range []string{"owner-000.csv", "owner-003.csv", "validation.csv", "test.csv", "schema.json"} {
		if _, err := os.Stat(filepath.Join(shards, f)); err != nil {
			t.Fatal(err)
		}
	}
	preds := filepath.Join(dir, "p.txt")
	if code, _, errOut := run("predict", "--model", model, "--data", "csv:"+filepath.Join(shards, "test.csv"), "--out", preds); code != 0 {
		t.Fatalf("predict csv: %s", errOut)
	}
	if b, _ := os.ReadFile(preds); strings.Count(string(b), "\n") != 200 {
		t.Fatalf("%d predictions", strings.Count(string(b), "\n"))
	}
	key := filepath.Join(dir, "k")
	if code, out, _ := run("keygen", "--out", key); code != 0 || !strings.HasPrefix(out, "12D3KooW") {
		t.Fatalf("keygen: %d %q", code, out)
	}
	if code, _, errOut := run("keygen", "--out", key); code != exitError || !strings.Contains(errOut, key) {
		t.Fatalf("keygen over an existing key: %d %q", code, errOut)
	}
}

func TestSimulateSmall(t *testing.T) {
	code, out, errOut := run("simulate", "--owners-per-round", "10", "--rounds", "2", "--samples-per-owner", "20",
		"--user-samples", "500", "--holdout", "500", "--securesum", "ring",
		"--force") // a small plan for the mechanics: its forecast accepts about half its first rounds
	if code != 0 || !strings.Contains(out, "messages per owner") {
		t.Fatalf("simulate: %d %q %q", code, out, errOut)
	}
}

// keygen --psk writes a private-network key and prints its fingerprint;
// --out and --psk together, or neither, are usage errors.
func TestKeygenPSK(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.key")
	code, out, errOut := run("keygen", "--psk", path)
	if code != 0 || !strings.Contains(out, "fingerprint") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if code, _, _ := run("keygen", "--psk", path); code == 0 {
		t.Fatal("overwrote the key")
	}
	for _, args := range [][]string{{"keygen"}, {"keygen", "--psk", path + "2", "--out", path + "3"}} {
		if code, _, _ := run(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// An owner whose --metrics address cannot be bound exits with a usage
// error naming the flag, before it joins anything (it used to log the
// error and run on without metrics).
func TestOwnerMetricsBindIsAnError(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	key, userKey := filepath.Join(dir, "owner.key"), filepath.Join(dir, "user.key")
	run("keygen", "--out", key)
	_, uid, _ := run("keygen", "--out", userKey)
	data := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(data, []byte("a,label\n0.5,x\n-0.5,y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.json"), []byte(`{"version":1,"label":"label","classes":["x","y"],"columns":[{"name":"a","kind":"numeric","min":-1,"max":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("owner", "--data", data, "--key", key, "--state", filepath.Join(dir, "state"),
		"--user", strings.TrimSpace(uid), "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", ln.Addr().String())
	if code != exitUsage || !strings.Contains(errOut, "--metrics") {
		t.Fatalf("exit %d, stderr %q; want %d naming --metrics", code, errOut, exitUsage)
	}
}
