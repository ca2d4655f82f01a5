package role

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// DefaultSendTimeout bounds every Send and Publish an Outbox makes.
const DefaultSendTimeout = 10 * time.Second

// Inline is implemented by transports whose Send and Publish never wait
// (they only queue, as the in-memory network's do). PostsInline true makes
// a role post to the transport directly (protocol.Direct) instead of
// through an Outbox. A wrapping transport forwards the wrapped one's answer.
type Inline interface {
	PostsInline() bool
}

// Clocked is implemented by transports that carry their own clock (the
// in-memory network's virtual time); a role on them uses it unless
// WithClock or the role's config names another.
type Clocked interface {
	Clock() protocol.Clock
}

// Options are what every Start takes beside the role's config and the
// transport. The zero value is completed by Resolve.
type Options struct {
	// Clock drives the role's loop and timers; nil means the role config's
	// clock, else the transport's (Clocked), else protocol.RealClock.
	Clock protocol.Clock
	// SendTimeout bounds each Send and Publish of the Outbox (real
	// transports); 0 means DefaultSendTimeout.
	SendTimeout time.Duration
	// OnDrop, if set, is the role's drop-counter hook (metrics): it sees
	// every dropped message's reason.
	OnDrop func(reason string)
	// Poster, if set, replaces the poster Start would choose (tests that
	// record what a role posts). Start does not close it.
	Poster protocol.Poster
}

// Option sets one of the Options (the go-libp2p-pubsub style).
type Option func(*Options)

// WithClock drives the role with c.
func WithClock(c protocol.Clock) Option { return func(o *Options) { o.Clock = c } }

// WithSendTimeout bounds each Send and Publish of the role's Outbox.
func WithSendTimeout(d time.Duration) Option { return func(o *Options) { o.SendTimeout = d } }

// WithDropHook installs f as the role's drop-counter hook.
func WithDropHook(f func(reason string)) Option { return func(o *Options) { o.OnDrop = f } }

// WithPoster makes the role post through p (which the caller closes).
func WithPoster(p protocol.Poster) Option { return func(o *Options) { o.Poster = p } }

// Resolve applies opts over the defaults: cfgClock is the clock the role's
// config names (nil if none).
func Resolve(tr protocol.Transport, cfgClock protocol.Clock, opts ...Option) Options {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if o.Clock == nil {
		o.Clock = cfgClock
	}
	if o.Clock == nil {
		if c, ok := tr.(Clocked); ok {
			o.Clock = c.Clock()
		}
	}
	if o.Clock == nil {
		o.Clock = protocol.RealClock{}
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	return o
}

// IsInline reports whether a role posts to tr directly.
func IsInline(tr protocol.Transport) bool {
	i, ok := tr.(Inline)
	return ok && i.PostsInline()
}

// Post is the poster a started role uses, with what it owns: the Outbox
// Start made for a real transport (closed by Close, after the role), none
// for an inline transport or a poster given by WithPoster.
type Post struct {
	protocol.Poster
	outbox *protocol.Outbox
}

// NewPost chooses the poster for a role on tr (see the package doc); log
// receives the poster's failures.
func NewPost(tr protocol.Transport, o Options, log hclog.Logger) *Post {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	switch {
	case o.Poster != nil:
		return &Post{Poster: o.Poster}
	case IsInline(tr):
		return &Post{Poster: protocol.Direct{Tr: tr, Log: log}}
	default:
		ob := protocol.NewOutbox(tr, o.SendTimeout, log.Named("outbox"))
		return &Post{Poster: ob, outbox: ob}
	}
}

// Outbox is the Outbox Start made (nil when the role posts inline or
// through a given poster).
func (p *Post) Outbox() *protocol.Outbox { return p.outbox }

// Drain waits until the Outbox has handed every queued message to the
// transport, or ctx ends (a node that exits after its last message lets it
// leave first). Nothing to wait for when the role posts inline.
func (p *Post) Drain(ctx context.Context) {
	if p != nil && p.outbox != nil {
		p.outbox.Drain(ctx)
	}
}

// Close drops what the Outbox still queues and waits for what it is
// sending; later posts are dropped. Call it after the role's loop closed.
// Idempotent; nil-safe.
func (p *Post) Close() {
	if p != nil && p.outbox != nil {
		p.outbox.Close()
	}
}
