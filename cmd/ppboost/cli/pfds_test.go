package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestPFDSSim(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"pfds", "sim", "-agents", "8", "-hmax", "4", "-max-leaves", "64", "-eval", "2", "-protocol"}, &out, &errOut)
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
