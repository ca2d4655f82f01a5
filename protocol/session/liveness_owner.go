package session

import (
	"errors"
	"fmt"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The owner's side of liveness and late joins (liveness.go has the user's).

// onLiveCheck answers the data user's liveness check with its nonce (the
// control path has checked that it comes from this owner's data user, for
// the session it joined). The echo carries nothing of the owner's data.
func (o *Owner) onLiveCheck(c *wire.LiveCheck) error {
	if n := len(c.GetNonce()); n != NonceBytes {
		return fmt.Errorf("%w: LiveCheck nonce of %d bytes, want %d", ErrLiveness, n, NonceBytes)
	}
	if c.GetRosterVersion() == 0 {
		return fmt.Errorf("%w: LiveCheck for roster version 0", ErrLiveness)
	}
	o.heldFor = max(o.heldFor, c.GetRosterVersion())
	o.sendUser(&wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_LiveEcho{
		LiveEcho: &wire.LiveEcho{Nonce: c.GetNonce()}}})
	return nil
}

// waitsForLaterRoster reports whether this owner joined after the rounds
// started (the user's check named a roster version after the first) and no
// roster named it yet: rosters that leave it out are not for it.
func (o *Owner) waitsForLaterRoster() bool {
	return o.heldFor > 1 && !o.inRoster && o.lc.Phase() == lifecycle.Admitting
}

// leaveUnrostered leaves a session whose rosters never named this owner.
func (o *Owner) leaveUnrostered(why string) error {
	o.warnOnce("leaving a session whose roster does not name this owner", "session", o.session, "reason", why)
	o.refused(o.session, why)
	o.observe(OwnerEvent{Kind: OwnerEventLeft, Detail: why})
	if err := o.lc.Leave(); err != nil {
		return errors.Join(protocol.ErrUnexpected, err)
	}
	return nil
}
