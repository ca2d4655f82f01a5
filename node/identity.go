package node

import (
	crand "crypto/rand"
	"fmt"
	"github.com/ppboost/ppboost/store"
	"io"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// maxKeyFile bounds what LoadKey reads: a marshalled Ed25519 key is 68 bytes.
const maxKeyFile = 4 << 10

// GenerateKey writes a new Ed25519 identity (libp2p's protobuf key encoding)
// to path with mode 0600 and returns its peer id. It never overwrites: an
// existing file is an error wrapping fs.ErrExist. The file and its directory
// are fsynced before GenerateKey returns.
func GenerateKey(path string) (peer.ID, error) {
	sk, _, err := crypto.GenerateEd25519Key(crand.Reader)
	if err != nil {
		return "", fmt.Errorf("key file %s: generate: %w", path, err)
	}
	b, err := crypto.MarshalPrivateKey(sk)
	if err != nil {
		return "", fmt.Errorf("key file %s: marshal: %w", path, err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		return "", fmt.Errorf("key file %s: peer id: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("key file %s: %w", path, err)
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = store.SyncDir(filepath.Dir(path))
	}
	if werr != nil {
		os.Remove(path) // a half-written key is worse than none
		return "", fmt.Errorf("key file %s: write: %w", path, werr)
	}
	return id, nil
}

// LoadKey reads an identity written by GenerateKey. It refuses files that
// group or others may read (ErrKeyPermissions, naming the file and its mode),
// anything that is not a regular file, and keys that are not Ed25519.
func LoadKey(path string) (crypto.PrivKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s: not a regular file (%v)", path, st.Mode().Type())
	}
	if mode := st.Mode().Perm(); mode&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %#o: %w (chmod 600 it)", path, mode, ErrKeyPermissions)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("key file %s: larger than %d bytes: not a libp2p private key", path, maxKeyFile)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("key file %s: empty", path)
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

// CheckPeerID reports whether s is a well-formed libp2p peer id.
func CheckPeerID(s string) error {
	_, err := peer.Decode(s)
	return err
}
