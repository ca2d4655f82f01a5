package node

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

func TestGenerateAndLoadKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owner.key")
	id, err := GenerateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %#o, want 0600", st.Mode().Perm())
	}
	before, _ := os.ReadFile(path)
	if _, err := GenerateKey(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("GenerateKey over an existing key: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("GenerateKey changed an existing key")
	}
	sk, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := peer.IDFromPrivateKey(sk); got != id {
		t.Fatalf("loaded key has id %s, generated %s", got, id)
	}
}

func TestLoadKeyRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	if _, err := GenerateKey(good); err != nil {
		t.Fatal(err)
	}
	keyBytes, _ := os.ReadFile(good)
	rsa, _, err := crypto.GenerateKeyPairWithReader(crypto.Secp256k1, 256, crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secp, _ := crypto.MarshalPrivateKey(rsa)
	tests := []struct {
		name    string
		content []byte
		mode    os.FileMode
		want    []string
		is      error
	}{
		{"world readable", keyBytes, 0o644, []string{"0644"}, ErrKeyPermissions},
		{"group readable", keyBytes, 0o640, []string{"0640"}, ErrKeyPermissions},
		{"garbage", []byte("garbage"), 0o600, []string{"not a libp2p private key"}, nil},
		{"empty", nil, 0o600, []string{"empty"}, nil},
		{"huge", make([]byte, maxKeyFile+1), 0o600, []string{"larger than"}, nil},
		{"not ed25519", secp, 0o600, []string{"Secp256k1", "want Ed25519"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			mustWrite(t, path, string(tc.content), tc.mode)
			_, err := LoadKey(path)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(dir, "missing.key")
		if _, err := LoadKey(path); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Fatalf("missing key: %v", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(sub); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("directory as key: %v", err)
		}
	})
}

func ExampleGenerateKey() {
	dir, _ := os.MkdirTemp("", "ppboost")
	defer os.RemoveAll(dir)
	id, err := GenerateKey(filepath.Join(dir, "owner.key"))
	fmt.Println(err == nil, strings.HasPrefix(id.String(), "12D3KooW"))
	// Output: true true
}

// FuzzLoadKey: any file content yields an Ed25519 key or an error naming
// the file, never a panic.
func FuzzLoadKey(f *testing.F) {
	sk, _, _ := crypto.GenerateEd25519Key(crand.Reader)
	good, _ := crypto.MarshalPrivateKey(sk)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x01, 0x12, 0x40})
	f.Add(good[:len(good)-1])
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		k, err := LoadKey(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if k.Type() != crypto.Ed25519 {
			t.Fatalf("loaded a %v key", k.Type())
		}
	})
}

// GeneratePSK writes a swarm.key v1 file that the node's own reader
// accepts, mode 0600, never overwriting; two keys differ; a node started
// with it runs a private network.
func TestGeneratePSK(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swarm.key")
	fp, err := GeneratePSK(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q", fp)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), PSKHeader) || len(b) != len(PSKHeader)+65 {
		t.Fatalf("file %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if _, err := readPSK(path); err != nil {
		t.Fatal(err)
	}
	if _, err := GeneratePSK(path); err == nil {
		t.Fatal("overwrote an existing key")
	}
	other := filepath.Join(dir, "other.key")
	fp2, err := GeneratePSK(other)
	if err != nil || fp2 == fp {
		t.Fatalf("second key: %v, fingerprint %q twice", err, fp)
	}
}
