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

// ReadFrame reads one varint-length-prefixed frame of at most max bytes.
// It returns io.EOF only on a clean end before any byte of a frame.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
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
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrFrameTooLarge, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
