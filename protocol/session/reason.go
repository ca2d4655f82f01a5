package session

import (
	"errors"

	"github.com/ppboost/ppboost/protocol"
)

// reasonOf names an error for Counters: the sentinel's text.
func reasonOf(err error) string {
	for _, s := range []error{protocol.ErrWrongSession, protocol.ErrWrongRound, protocol.ErrNotUser, protocol.ErrNotSelected,
		protocol.ErrDuplicateShare, protocol.ErrUnexpected, protocol.ErrBadShare, protocol.ErrBadConfig, ErrLiveness} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "malformed"
}
