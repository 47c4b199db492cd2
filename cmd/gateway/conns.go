package main

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// connLimit caps one listener's open connections. A connection accepted
// while max are open closes a keep-alive connection that sits idle between
// requests (its client reconnects, as after --idle-timeout); when none is
// idle, it waits until one is idle or closed. Only that one connection
// waits accepted; the next ones wait in the kernel's accept queue, where
// they hold no file descriptor of the gateway, so the descriptors loom's
// pipes need stay free however many connections clients open.
//
// A silent new connection holds its slot at most --read-header-timeout, a
// request at most the server's read and write deadlines, an idle one until
// a new connection needs the slot or --idle-timeout passes.
type connLimit struct {
	max     int
	slots   chan struct{}
	done    chan struct{}
	idled   chan struct{} // a connection turned idle (buffered, one)
	closing sync.Once
	waited  atomic.Int64 // Accepts that found every slot taken
	evicted atomic.Int64 // idle connections closed to free a slot

	mu   sync.Mutex
	idle map[net.Conn]struct{}
}

func newConnLimit(max int) *connLimit {
	return &connLimit{
		max:   max,
		slots: make(chan struct{}, max),
		done:  make(chan struct{}),
		idled: make(chan struct{}, 1),
		idle:  make(map[net.Conn]struct{}),
	}
}

// Open returns the number of connections holding a slot.
func (l *connLimit) Open() int { return len(l.slots) }

// listener returns ln with Accept under the limit. The limit serves one
// listener; the server on it must call ConnState.
func (l *connLimit) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, limit: l}
}

// ConnState is the http.Server hook that tells the limit which connections
// are idle.
func (l *connLimit) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s == http.StateIdle {
		l.idle[c] = struct{}{}
		select {
		case l.idled <- struct{}{}:
		default:
		}
	} else {
		delete(l.idle, c)
	}
}

// acquire takes a slot for a connection just accepted. When all are
// taken it closes an idle connection, whose slot is then free, or waits
// for a connection to close or turn idle. It fails once the listener is
// closed.
func (l *connLimit) acquire() error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.waited.Add(1)
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		default:
		}
		if l.evictIdle() {
			continue // its slot is free now
		}
		select {
		case l.slots <- struct{}{}:
			return nil
		case <-l.idled:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

// evictIdle closes one idle connection, if any, and reports whether it did.
func (l *connLimit) evictIdle() bool {
	l.mu.Lock()
	var victim net.Conn
	for c := range l.idle {
		victim = c
		delete(l.idle, c)
		break
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	l.evicted.Add(1)
	_ = victim.Close()
	return true
}

type limitListener struct {
	net.Listener
	limit *connLimit
}

// Accept accepts first and then takes a slot, so that an idle connection
// is closed only for a client that is there.
func (ln *limitListener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := ln.limit.acquire(); err != nil {
		c.Close()
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-ln.limit.slots })}, nil
}

func (ln *limitListener) Close() error {
	ln.limit.closing.Do(func() { close(ln.limit.done) })
	return ln.Listener.Close()
}

// limitConn gives its slot back when it is closed, by the server or by
// evictIdle, exactly once.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// fdReserve is the file descriptors the gateway keeps besides its two
// listeners' connections: four per live loom process (its stdout pipe's
// two ends, a pidfd, and one spare), and a fixed margin for the
// listeners, the log, the null device, the store's connection pool and
// the runtime.
func fdReserve(maxConcurrentLoom int) int { return 4*maxConcurrentLoom + 256 }

// fdLimit is the process's soft limit on open files (the Go runtime raises
// it to the hard limit at start), or 0 when it cannot be read.
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

// connectionCap is --max-connections: the flag when it is set (0 meaning
// the default), checked against the descriptor limit; by default 1024, or
// less when the limit leaves less room. Both listeners take the cap each.
func connectionCap(flagValue, maxConcurrentLoom, limit int) (int, error) {
	const dflt = 1024
	reserve := fdReserve(maxConcurrentLoom)
	if limit == 0 {
		if flagValue > 0 {
			return flagValue, nil
		}
		return dflt, nil
	}
	room := (limit - reserve) / 2
	if flagValue > 0 {
		if flagValue > room {
			return 0, usagef("--max-connections %d: two listeners at %d connections each and %d loom processes need about %d open files; the limit is %d (raise ulimit -n, or lower --max-connections to %d or less)",
				flagValue, flagValue, maxConcurrentLoom, 2*flagValue+reserve, limit, max(room, 0))
		}
		return flagValue, nil
	}
	if room < 16 {
		return 0, usagef("the open-file limit %d leaves room for %d connections per listener after %d loom processes; raise ulimit -n or lower --max-concurrent-loom", limit, max(room, 0), maxConcurrentLoom)
	}
	return min(dflt, room), nil
}
