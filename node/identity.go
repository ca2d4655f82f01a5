package node

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"os"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrKeyPermissions is returned for key files readable by group or others.
var ErrKeyPermissions = errors.New("key file is readable by group or others")

// GenerateKey writes a new Ed25519 identity to path (mode 0600, never
// overwriting) and returns its peer id.
func GenerateKey(path string) (peer.ID, error) {
	sk, _, err := crypto.GenerateEd25519Key(crand.Reader)
	if err != nil {
		return "", err
	}
	b, err := crypto.MarshalPrivateKey(sk)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("key file %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return "", fmt.Errorf("key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return peer.IDFromPrivateKey(sk)
}

// LoadKey reads an identity, refusing files that group or others can read.
func LoadKey(path string) (crypto.PrivKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if mode := st.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("%s: mode %#o: %w (chmod 600 it)", path, mode, ErrKeyPermissions)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	sk, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("key file %s: not a libp2p private key: %w", path, err)
	}
	if sk.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("key file %s: %v key, want Ed25519", path, sk.Type())
	}
	return sk, nil
}
