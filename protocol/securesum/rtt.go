package securesum

import (
	"time"

	"github.com/ppboost/ppboost/protocol"
)

// RTTs keeps a round-trip-time estimate per peer, as TCP does for its
// retransmission timer (Jacobson/Karels, RFC 6298): a smoothed RTT and a
// mean deviation, updated from each sample R as
//
//	rttvar <- 3/4 rttvar + 1/4 |srtt - R|,  srtt <- 7/8 srtt + 1/8 R
//
// (the first sample sets srtt = R, rttvar = R/2), and a timeout of
// srtt + 4 rttvar. Samples are the coordinator's own request/reply timings
// through its Clock (a probe and the member's report, a dealer set and the
// partial sum, a ring ping and its pong) and, from the session, an
// announcement and the owner's join that answers it: they include the
// receiver's queueing and processing time, so a busy peer's estimate grows
// with its load. Like the Coordinator it has no locks: use it on one loop.
type RTTs struct {
	est map[protocol.PeerID]*rttEstimate
	// max is the largest srtt + 4 rttvar seen over all peers, the
	// estimate of a peer never measured.
	max time.Duration
}

type rttEstimate struct{ srtt, rttvar time.Duration }

// maxRTTPeers bounds the estimator's memory: a session holds at most this
// many peers (the roster size limit of the user, 2^17).
const maxRTTPeers = 1 << 17

// NewRTTs returns an empty estimator.
func NewRTTs() *RTTs { return &RTTs{est: map[protocol.PeerID]*rttEstimate{}} }

// Observe records one round-trip sample of peer p. Non-positive samples
// (a clock that did not move, as in virtual time with instant links) count
// as a zero RTT.
func (r *RTTs) Observe(p protocol.PeerID, sample time.Duration) {
	sample = max(sample, 0)
	e := r.est[p]
	if e == nil {
		if len(r.est) >= maxRTTPeers {
			return
		}
		e = &rttEstimate{srtt: sample, rttvar: sample / 2}
		r.est[p] = e
	} else {
		d := e.srtt - sample
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + sample) / 8
	}
	r.max = max(r.max, e.srtt+4*e.rttvar)
}

// RTO is peer p's timeout estimate, srtt + 4 rttvar, and whether p was
// ever measured; an unmeasured peer gets the largest estimate of any peer.
func (r *RTTs) RTO(p protocol.PeerID) (time.Duration, bool) {
	if e := r.est[p]; e != nil {
		return e.srtt + 4*e.rttvar, true
	}
	return r.max, false
}

// SRTT is peer p's smoothed RTT (0 and false if it was never measured).
func (r *RTTs) SRTT(p protocol.PeerID) (time.Duration, bool) {
	if e := r.est[p]; e != nil {
		return e.srtt, true
	}
	return 0, false
}

// MaxRTO is the largest timeout estimate among peers, the slowest expected
// one; an unmeasured peer counts as the slowest measured peer, and with no
// measurement at all the result is fallback.
func (r *RTTs) MaxRTO(peers []protocol.PeerID, fallback time.Duration) time.Duration {
	if len(r.est) == 0 {
		return fallback
	}
	var m time.Duration
	for _, p := range peers {
		rto, _ := r.RTO(p)
		m = max(m, rto)
	}
	return m
}

// MaxSRTT is the largest smoothed RTT among the measured peers of peers,
// and how many of them were measured.
func (r *RTTs) MaxSRTT(peers []protocol.PeerID) (time.Duration, int) {
	var m time.Duration
	n := 0
	for _, p := range peers {
		if s, ok := r.SRTT(p); ok {
			m = max(m, s)
			n++
		}
	}
	return m, n
}

// Len is the number of peers measured.
func (r *RTTs) Len() int { return len(r.est) }
