package node

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// bootStatus is the last dial result of every bootstrap peer, for a node
// that must say why it heard nothing (BootstrapErr).
type bootStatus struct {
	mu   sync.Mutex
	errs map[string]error // peer -> last dial error; nil once connected
}

func (b *bootStatus) set(peer string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.errs == nil {
		b.errs = map[string]error{}
	}
	b.errs[peer] = err
}

// BootstrapErr says why this node is not connected to its bootstrap peers:
// nil when it has none or is connected to at least one, else the last dial
// error of each ("no dial finished yet" before the first one returns).
func (x *Host) BootstrapErr() error {
	b := &x.boot
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(x.redial) == 0 {
		return nil
	}
	var parts []string
	for id := range x.redial {
		err, tried := b.errs[id.String()]
		switch {
		case tried && err == nil:
			return nil
		case !tried:
			parts = append(parts, fmt.Sprintf("%s: no dial finished yet", id))
		default:
			parts = append(parts, fmt.Sprintf("%s: %v", id, err))
		}
	}
	sort.Strings(parts)
	return errors.New("cannot reach the bootstrap peer " + strings.Join(parts, "; "))
}
