package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the default cap on one frame's payload. Secure-sum messages are
// a few hundred bytes; shares of the largest learner (NCC with 80 samples of
// 110 features) are about 100 KiB.
const MaxFrame = 1 << 20

// Frame errors.
var (
	ErrFrameTooLarge = errors.New("wire: frame exceeds size cap")
	ErrBadVarint     = errors.New("wire: malformed length prefix")
)

// WriteFrame writes one varint-length-prefixed frame.
func WriteFrame(w io.Writer, payload []byte, max int) error {
	if len(payload) > max {
		return fmt.Errorf("%w: %d > %d bytes", ErrFrameTooLarge, len(payload), max)
	}
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(payload)))
	if _, err := w.Write(hdr[:n]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// firstChunk is the buffer a frame starts with: a claimed length is only a
// claim, so ReadFrame allocates as bytes arrive, not as announced.
const firstChunk = 4 << 10

// ReadFrame reads one varint-length-prefixed frame of at most max bytes.
// It returns io.EOF only on a clean end before any byte of a frame. It is
// ReadFrameFunc without a reservation.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	return ReadFrameFunc(r, max, nil)
}

// ReadFrameFunc reads one frame like ReadFrame, but never allocates the
// claimed length up front: the buffer starts at a few KiB and doubles (up to
// the claim) only when the bytes already received fill it, so a sender that
// announces 1 MiB and sends 10 bytes costs 4 KiB, not 1 MiB, and the
// capacity held is at most twice the bytes received (plus the first chunk).
// Before each allocation reserve (if not nil) is asked for the extra
// capacity; an error from it ends the read with that error (the caller
// bounds what peers can make it hold). The capacity reserved is the
// returned slice's cap on success; on error the caller releases whatever it
// had granted.
func ReadFrameFunc(r *bufio.Reader, limit int, reserve func(extra int) error) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrBadVarint, err)
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrFrameTooLarge, n, limit)
	}
	want := int(n)
	var buf []byte
	for len(buf) < want {
		if len(buf) == cap(buf) {
			c := min(want, max(firstChunk, 2*cap(buf)))
			if reserve != nil {
				if err := reserve(c - cap(buf)); err != nil {
					return nil, err
				}
			}
			grown := make([]byte, len(buf), c)
			copy(grown, buf)
			buf = grown
		}
		k, err := r.Read(buf[len(buf):cap(buf)]) // cap(buf) <= want
		buf = buf[:len(buf)+k]
		if err != nil && len(buf) < want {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	if buf == nil {
		buf = []byte{}
	}
	return buf, nil
}
