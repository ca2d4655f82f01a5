package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestEpsRefusedOneWay: every command that takes an epsilon refuses 0, a
// negative, an infinite and a non-number value with the same message,
// naming the flag, before it reads any data (exit 2).
func TestEpsRefusedOneWay(t *testing.T) {
	commands := [][]string{
		{"sim"}, {"simulate"}, {"dpboost"}, {"fed"}, {"pfds", "sim"}, {"pfds", "testnet"},
		{"user"}, {"fed-user"}, {"owner"}, {"testnet"}, {"pfds", "announce"},
	}
	for _, cmd := range commands {
		for _, v := range []string{"0", "-1", "+Inf", "NaN"} {
			var out, errOut bytes.Buffer
			args := append(append([]string{}, cmd...), "--eps", v, "--data", "no-such-file.csv")
			code := Main(args, &out, &errOut)
			want := `--eps: epsilon must be a finite number > 0, got "` + v + `"`
			if code != 2 || !strings.Contains(errOut.String(), want) {
				t.Errorf("%s --eps %s: exit %d, stderr %q; want 2 and %q", strings.Join(cmd, " "), v, code, firstLine(errOut.String()), want)
			}
		}
	}
	for _, flag := range []string{"--fed-eps", "--pfds-eps"} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"owner", flag, "0"}, &out, &errOut); code != 2 ||
			!strings.Contains(errOut.String(), flag+`: epsilon must be a finite number > 0, got "0"`) {
			t.Errorf("owner %s 0: exit %d, %q", flag, code, firstLine(errOut.String()))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
