// Package status serves a node's status page: a small self-contained HTML
// page (inline CSS and script, an inline SVG curve, no external resources)
// and its JSON (/status.json), refreshed by the page every 2 s.
//
// A Board holds what the page shows. It is fed by the session's observer
// hooks (RoundReport for the data user, OwnerEvent for an owner) and reads
// the node's state through session snapshots, which are copied on the
// node's loop (Loop.Read); it never touches session state itself.
//
// The badge is the session's outcome once it ended (protocol.Outcome's
// kind, the one the CLI's exit status comes from: complete, partial with a
// model of fewer rounds, failed without one), not its state: a partial
// session's state is "failed". Rounds are counted as kept of planned with
// dropped attempts apart, a secure sum is named only when one runs, and the
// privacy spend is per owner: each owner's epsilon is its own budget, and
// no figure sums it over owners.
//
// It owns bounding and escaping of what it shows: owner-supplied reasons
// are outsider input, cut in length and count (session.CutReason,
// session.SnapshotMaxReasons), serialised as JSON (which escapes <, > and &),
// and put into the page with textContent only; the page carries a
// Content-Security-Policy that runs no script but its own.
//
// It must not show anything the node's operator does not already see in its
// logs: on the data user's page the aggregates the user computes and the
// owners' refusal reasons; on an owner's page its own ledger and the public
// session, never a value computed from the owner's data.
//
// CheckPage is the headless-browser check of a rendered page (CI's
// testnet/status_check.sh): the round table's rows in the DOM, the curve's
// SVG path, and the curve's colour in the plot region of a screenshot.
//
// Where it sits: beside the CLI: it imports boost, dataset, protocol/session
// and internal/httpserve, and cmd/ppboost/cli serves it; it reads the roles'
// published snapshots and must not change a role's state.
package status
