package fedboost

import (
	"context"
	"fmt"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/role"
)

// StartUser is the one way to run a federated-DPBoost data user on a
// transport (session.StartUser's twin): it completes cfg's clock
// (role.Resolve), chooses the poster (role.NewPost: direct on an inline
// transport, an Outbox otherwise), builds the user (NewUser, which
// validates cfg), installs the drop hook and attaches it to tr. The session
// begins with Start, once the caller's network is ready. Close closes the
// user's driver, then the poster it made; the transport is the caller's.
func StartUser(tr protocol.Transport, cfg UserConfig, opts ...role.Option) (*User, error) {
	return role.Start(tr, "fed user", cfg.Clock, cfg.Log, opts, func(clock protocol.Clock, post *role.Post) (*User, error) {
		cfg.Clock = clock
		u, err := NewUser(tr.ID(), post, cfg)
		if err != nil {
			return nil, fmt.Errorf("fed user: %w", err)
		}
		u.rolePost = post
		u.look, _ = tr.(protocol.AddressLookup)
		return u, nil
	})
}

// StartOwner is StartUser for an owner: attached to tr (handler, control
// validator pinned to cfg.User, topic), it waits for the announcement.
func StartOwner(tr protocol.Transport, cfg OwnerConfig, opts ...role.Option) (*Owner, error) {
	return role.Start(tr, "fed owner", cfg.Clock, cfg.Log, opts, func(clock protocol.Clock, post *role.Post) (*Owner, error) {
		cfg.Clock = clock
		ow, err := NewOwner(tr.ID(), post, cfg)
		if err != nil {
			return nil, fmt.Errorf("fed owner: %w", err)
		}
		ow.rolePost = post
		ow.book, _ = tr.(protocol.AddressBook)
		ow.tr = tr
		return ow, nil
	})
}

// Drain waits until the poster StartUser made has handed every queued
// message to the transport, or ctx ends (nothing to wait for inline).
func (u *User) Drain(ctx context.Context) { u.rolePost.Drain(ctx) }

// Drain is User.Drain for an owner.
func (o *Owner) Drain(ctx context.Context) { o.rolePost.Drain(ctx) }
