package status

import (
	"context"
	"strings"
	"testing"
)

func TestListenErrorsNameTheFlag(t *testing.T) {
	for _, addr := range []string{"", "localhost", "256.1.1.1:80", "127.0.0.1:99999"} {
		if _, err := Listen(context.Background(), "--status", addr); err == nil || !strings.Contains(err.Error(), "--status") {
			t.Errorf("Listen(%q): %v", addr, err)
		}
	}
}
