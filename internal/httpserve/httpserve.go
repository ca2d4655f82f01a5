package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// MaxConns is how many connections a server holds at once; more wait in the
// kernel's accept queue.
const MaxConns = 32

// Serve serves h on ln until ctx is cancelled, then shuts down (at most 2 s
// for requests in flight). It closes ln. At most MaxConns connections are
// open at once, and each must send its request headers within 5 s. name
// ("status", "metrics") starts its errors.
func Serve(ctx context.Context, name string, ln net.Listener, h http.Handler) error {
	ln = &limitListener{Listener: ln, sem: make(chan struct{}, MaxConns)}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("%s: serve on %s: %w", name, ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: serve on %s: %w", name, ln.Addr(), err)
	}
	return nil
}

// limitListener accepts at most cap(sem) connections at a time.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.sem <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
