package session

import (
	"context"
	"fmt"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/role"
)

// StartUser is the one way to run a data user on a transport: it completes
// cfg's clock (role.Resolve: the option's, cfg.Clock, the transport's,
// the wall clock), chooses the poster (role.NewPost: direct on an inline
// transport, an Outbox otherwise), builds the user (NewUser, which
// validates cfg), installs the drop hook and attaches it to tr (handler,
// shares validator, topic; it starts announcing). Close closes the user's
// loop, then the poster it made; the transport is the caller's, to be
// closed after the user.
func StartUser(tr protocol.Transport, cfg UserConfig, opts ...role.Option) (*User, error) {
	o := role.Resolve(tr, cfg.Clock, opts...)
	cfg.Clock = o.Clock
	post := role.NewPost(tr, o, cfg.Log)
	u, err := NewUser(tr.ID(), post, cfg)
	if err != nil {
		post.Close()
		return nil, err
	}
	u.rolePost = post
	if o.OnDrop != nil {
		u.Stats().SetHook(o.OnDrop)
	}
	if err := u.Attach(tr); err != nil {
		u.Close()
		return nil, fmt.Errorf("user: attach: %w", err)
	}
	return u, nil
}

// StartOwner is StartUser for a data owner: it attaches the owner to tr
// (handler, control validator pinned to cfg.User, topic; the transport's
// AddressBook and Preparer if it has them) and returns it waiting for an
// announcement.
func StartOwner(tr protocol.Transport, cfg OwnerConfig, opts ...role.Option) (*Owner, error) {
	o := role.Resolve(tr, cfg.Clock, opts...)
	cfg.Clock = o.Clock
	post := role.NewPost(tr, o, cfg.Log)
	ow, err := NewOwner(tr.ID(), post, cfg)
	if err != nil {
		post.Close()
		return nil, err
	}
	ow.rolePost = post
	if o.OnDrop != nil {
		ow.Stats().SetHook(o.OnDrop)
	}
	if err := ow.Attach(tr); err != nil {
		ow.Close()
		return nil, fmt.Errorf("owner: attach: %w", err)
	}
	return ow, nil
}

// Drain waits until the poster StartUser made has handed every queued
// message to the transport, or ctx ends (nothing to wait for inline).
func (u *User) Drain(ctx context.Context) { u.rolePost.Drain(ctx) }

// Drain is User.Drain for an owner: an owner that exits right after its
// refusal lets the refusal leave first.
func (o *Owner) Drain(ctx context.Context) { o.rolePost.Drain(ctx) }
