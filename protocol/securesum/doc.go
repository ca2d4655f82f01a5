// Package securesum implements the two secure-sum protocols ppboost owners
// run to compute err_m and the weight sums without revealing their values:
// the masked ring of Wang & Chang's first paper and a Shamir secret-sharing
// sum with a threshold and a committee.
//
// The data user coordinates every instance (Coordinator); owners are the
// parties (Party). The coordinator learns only the total (ring) or partial
// sums over one agreed dealer set (Shamir), never a single party's value.
//
// Privacy. The masked ring hides a party's value from any single curious
// party, but its two ring neighbours together can unmask it: the value is the
// difference between what the successor received and what the predecessor
// sent, minus the party's mask, and the backward pass reveals that mask's
// effect. Shamir with threshold t hides every value from any coalition of
// fewer than t committee members. Choose Shamir when owners may collude.
//
// Shape. Both protocols are written as state kept per instance and driven by
// Begin/Sum, Handle and timer events; I/O goes through the Env callbacks.
// Every rule violation (duplicate, late, non-participant, malformed) drops the
// message and increments a counter in Stats; nothing crashes.
//
// Where it sits: below protocol/session and protocol/fedboost, whose owners
// hold a Party and whose data users hold a Coordinator, and above
// crypto/shamir, crypto/field and crypto/dpnoise. Both are sub-machines of
// their role (an engine.Machine): Begin, Handle and Fire run inside the
// role's transitions, their sends go into the role's effects, and the
// coordinator's per-instance timers are named timers of the role (Env.Timers,
// Env.TimerPrefix). It must not know about rounds, learners or ledgers
// beyond the Env callbacks (the caller charges a release before Begin),
// import libp2p or memnet, or keep state shared between parties (the
// simulator injects sharing through Env.Share).
package securesum
