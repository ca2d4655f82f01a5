package protocol

import (
	"fmt"
	"strings"
)

// Bounds on the roster addresses a data user relays (the federated
// FedConfig.roster_addrs and PFDS's PfdsAnnounce.roster_addrs): at most
// MaxMemberAddrs addresses per member, each at most MaxAddrBytes bytes.
const (
	MaxMemberAddrs = 8
	MaxAddrBytes   = 256
)

// EncodeRosterAddrs are CollectRosterAddrs' lists as an announcement
// carries them: each member's addresses joined by spaces.
func EncodeRosterAddrs(look AddressLookup, roster []PeerID, budget int) (out []string, ok bool) {
	lists, ok := CollectRosterAddrs(look, roster, budget)
	if lists == nil {
		return nil, ok
	}
	out = make([]string, len(lists))
	for i, l := range lists {
		out[i] = strings.Join(l, " ")
	}
	return out, true
}

// CollectRosterAddrs are the roster addresses of an announcement: member
// i's addresses as look knows them (full addresses ending in its own
// /p2p/ id; others are left out), within budget bytes in all, counting a
// separator after each (over it, one address per member; still over:
// none, ok false). None known at all: nil, ok true.
func CollectRosterAddrs(look AddressLookup, roster []PeerID, budget int) (lists [][]string, ok bool) {
	if look == nil {
		return nil, true
	}
	lists = make([][]string, len(roster))
	total, known := 0, false
	for i, m := range roster {
		for _, a := range look.PeerAddrs(m) {
			if len(lists[i]) < MaxMemberAddrs && checkAddr(m, a) == nil {
				lists[i] = append(lists[i], a)
				total += len(a) + 1
			}
		}
		known = known || len(lists[i]) > 0
	}
	if !known {
		return nil, true
	}
	if total > budget {
		total = 0
		for i := range lists {
			if len(lists[i]) > 1 {
				lists[i] = lists[i][:1]
			}
			if len(lists[i]) > 0 {
				total += len(lists[i][0]) + 1
			}
		}
		if total > budget {
			return nil, false
		}
	}
	return lists, true
}

// DecodeRosterAddrs parses an announcement's roster addresses (none, or
// one space-separated list per roster member) and checks them
// (CheckRosterAddrs). Errors name the entry, the member and the address.
func DecodeRosterAddrs(roster []PeerID, enc []string) ([][]string, error) {
	if len(enc) == 0 {
		return nil, nil
	}
	if len(enc) != len(roster) {
		return nil, fmt.Errorf("roster_addrs: %d entries for %d roster members (want none or one per member)", len(enc), len(roster))
	}
	out := make([][]string, len(enc))
	for i, s := range enc {
		// Bound the text before splitting it.
		if len(s) > MaxMemberAddrs*(MaxAddrBytes+1) {
			return nil, fmt.Errorf("roster_addrs[%d]: %d bytes (at most %d addresses of %d bytes)", i, len(s), MaxMemberAddrs, MaxAddrBytes)
		}
		out[i] = []string{}
		if s != "" {
			out[i] = strings.Split(s, " ")
		}
	}
	return out, CheckRosterAddrs(roster, out)
}

// CheckRosterAddrs checks roster addresses: none at all, or one list per
// member of at most MaxMemberAddrs addresses, each at most MaxAddrBytes
// bytes of printable ASCII without spaces, starting with "/" and ending in
// the member's own /p2p/ id (so an address cannot route one member's
// streams to another peer: the id is checked in the handshake). Errors
// name the member and the address.
func CheckRosterAddrs(roster []PeerID, addrs [][]string) error {
	if addrs == nil {
		return nil
	}
	if len(addrs) != len(roster) {
		return fmt.Errorf("roster_addrs has %d entries for %d roster members (want none or one per member)", len(addrs), len(roster))
	}
	for i, list := range addrs {
		if len(list) > MaxMemberAddrs {
			return fmt.Errorf("roster_addrs[%d] (%s): %d addresses (at most %d)", i, roster[i], len(list), MaxMemberAddrs)
		}
		for j, a := range list {
			if err := checkAddr(roster[i], a); err != nil {
				return fmt.Errorf("roster_addrs[%d] (%s): address %d %w", i, roster[i], j, err)
			}
		}
	}
	return nil
}

// checkAddr checks one of member m's addresses.
func checkAddr(m PeerID, a string) error {
	suffix := "/p2p/" + string(m)
	switch {
	case len(a) > MaxAddrBytes:
		return fmt.Errorf("is %d bytes (at most %d)", len(a), MaxAddrBytes)
	case !printableAddr(a) || !strings.HasPrefix(a, "/"):
		return fmt.Errorf("%q is not a multiaddr (printable ASCII from \"/\", no spaces)", truncate(a, 64))
	case !strings.HasSuffix(a, suffix) || len(a) == len(suffix):
		return fmt.Errorf("%q does not end in the member's own %s", truncate(a, 64), suffix)
	}
	return nil
}

// printableAddr reports whether a is non-empty printable ASCII without
// spaces.
func printableAddr(a string) bool {
	if a == "" {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] <= ' ' || a[i] > '~' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
