package lifecycle

import (
	"errors"
	"fmt"
)

// ErrEarly marks an input that arrived before one it depends on (gossip
// does not preserve order): a Reorder holds it and tries it again after
// the next input that applies.
var ErrEarly = errors.New("early")

// ErrReorderFull is returned when an early input finds the buffer full.
var ErrReorderFull = errors.New("too many early messages")

// Reorder is the one reorder buffer: it applies inputs and holds, up to
// Max, those that come too early, retrying them after each input that
// applies until none makes progress. Bounded: a peer cannot grow it.
type Reorder[T any] struct {
	Max  int
	held []T
}

// Apply applies x. An ErrEarly from apply holds x (or fails with
// ErrReorderFull when Max are held). After x applies, held inputs are
// retried until none applies; one that now fails with another error is
// discarded and its error given to late (counted by the caller). Apply
// returns x's own error, nil when x is held.
func (b *Reorder[T]) Apply(x T, apply func(T) error, late func(error)) error {
	err := apply(x)
	if errors.Is(err, ErrEarly) {
		if len(b.held) >= b.Max {
			return fmt.Errorf("%w (%d held)", ErrReorderFull, len(b.held))
		}
		b.held = append(b.held, x)
		return nil
	}
	if err == nil {
		b.retry(apply, late)
	}
	return err
}

// Retry tries the held inputs again (after something else applied: a
// timer, a sub-machine's completion).
func (b *Reorder[T]) Retry(apply func(T) error, late func(error)) { b.retry(apply, late) }

func (b *Reorder[T]) retry(apply func(T) error, late func(error)) {
	for progress := len(b.held) > 0; progress; {
		progress = false
		held := b.held
		b.held = nil
		for _, h := range held {
			switch err := apply(h); {
			case errors.Is(err, ErrEarly):
				b.held = append(b.held, h)
			case err == nil:
				progress = true
			default:
				if late != nil {
					late(err)
				}
			}
		}
	}
}

// Len is how many inputs are held.
func (b *Reorder[T]) Len() int { return len(b.held) }

// Reset discards what is held (a new session).
func (b *Reorder[T]) Reset() { b.held = nil }
