// Package simulate is the one simulation runner of the three systems: it
// builds an in-memory network (protocol/memnet, deterministic, in virtual
// time) and runs the real role state machines on it, one endpoint each:
//
//   - Run: a Wang & Chang session (session.Owner, session.User and their
//     secure sums) for up to 10^5 owners, with fault scenarios (owners
//     killed, paused, cut off; the data user killed and resumed from its
//     checkpoint) and silent owners; `ppboost simulate` is a thin layer over
//     it;
//   - RunFed: a federated DPBoost session (fedboost.Owner, fedboost.User);
//     `ppboost fed` and the fed experiments;
//   - RunPFDS: a PFDS session (pfds.Agent behind pfds.Driver, an announcer);
//     `ppboost pfds sim` and the PFDS experiments.
//
// Run injects the per-run sharing (share.go) that lets 10^5 simulated
// owners decode each control message once and hold one copy of a roster;
// production owners get none and share nothing.
//
// It must not contain protocol logic of its own: everything it measures
// comes from the protocol packages' code. The app packages (session,
// fedboost, pfds) do not import memnet outside their tests; this package is
// where they meet it.
//
// Where it sits: above the three systems and memnet, below the CLI and the
// experiments: it is the one simulation runner (Run, RunFed, RunPFDS) and the
// only place that injects session.Sharing and securesum.Sharing. Production
// code must not import it.
package simulate
