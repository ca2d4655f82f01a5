package node

import "errors"

// Errors returned by this package; check them with errors.Is.
var (
	// ErrKeyPermissions: the key file is readable by group or others.
	ErrKeyPermissions = errors.New("key file is readable by group or others")
	// ErrClosed: the host was closed.
	ErrClosed = errors.New("node: host closed")
	// ErrTooLarge: a payload exceeds the size cap of its topic or protocol.
	ErrTooLarge = errors.New("node: message exceeds the size cap")
	// ErrUnknownProtocol: Send was asked for a protocol this node does not speak.
	ErrUnknownProtocol = errors.New("node: not a ppboost stream protocol")
)
