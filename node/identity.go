package node

import (
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ppboost/ppboost/store"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// maxKeyFile bounds what LoadKey reads: a marshalled Ed25519 key is 68 bytes.
const maxKeyFile = 4 << 10

// PSKHeader is the first two lines of a private-network key file, the
// go-ipfs swarm.key v1 format: the codec line, the encoding line, then the
// 32-byte key as 64 hexadecimal digits on the third line.
const PSKHeader = "/key/swarm/psk/1.0.0/\n/base16/\n"

// GeneratePSK writes a new private-network key (32 random bytes, swarm.key
// v1 format, mode 0600, fsynced; never overwrites) and returns its SHA-256
// fingerprint's first 8 bytes in hex, which operators can compare without
// showing the key. Every node of a private network must hold the same file.
func GeneratePSK(path string) (string, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return "", fmt.Errorf("psk file %s: generate: %w", path, err)
	}
	body := PSKHeader + hex.EncodeToString(key[:]) + "\n"
	if err := writeNew(path, []byte(body)); err != nil {
		return "", fmt.Errorf("psk file %s: %w", path, err)
	}
	if _, err := readPSK(path); err != nil { // the reader's own check
		os.Remove(path)
		return "", err
	}
	sum := sha256.Sum256(key[:])
	return hex.EncodeToString(sum[:8]), nil
}

// writeNew creates path (mode 0600, never overwriting), writes b, fsyncs the
// file and its directory; a half-written file is removed.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
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
		os.Remove(path)
		return fmt.Errorf("write: %w", werr)
	}
	return nil
}

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
	if err := writeNew(path, b); err != nil { // a half-written key is removed: worse than none
		return "", fmt.Errorf("key file %s: %w", path, err)
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

// NoiseSecret is an owner's release-gate noise secret, derived from its
// identity key (HMAC-SHA256 of the key's raw bytes under a fixed label):
// the same key gives the same secret after a restart, so a value the owner
// released before is re-derived to the same bytes, and no secret file of
// its own needs keeping. Whoever holds the key file can recompute the
// owner's noise, as they could impersonate it.
func NoiseSecret(keyFile string) ([]byte, error) {
	k, err := LoadKey(keyFile)
	if err != nil {
		return nil, err
	}
	raw, err := k.Raw()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", keyFile, err)
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte("ppboost/release-noise-secret/v1"))
	return mac.Sum(nil), nil
}
