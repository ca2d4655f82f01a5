package memnet

import (
	"slices"

	"github.com/ppboost/ppboost/protocol"
)

func sortedIDs(m map[protocol.PeerID]bool) []protocol.PeerID {
	ids := make([]protocol.PeerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
