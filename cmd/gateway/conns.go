package main

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// silentGrace is how long a new connection may go without completing its
// first request's headers before it may be closed for a newcomer at the
// cap. Clients send their headers at once; one that has said nothing for
// this long is not waiting on the gateway.
const silentGrace = time.Second

// connLimit caps one listener's open connections. A connection accepted
// while max are open closes a keep-alive connection that sits idle between
// requests (its client reconnects, as after --idle-timeout), else the
// oldest new connection that has not completed its first request's
// headers within silentGrace; when there is neither, it waits until one
// is, or a connection closes. Only that one connection waits accepted; the
// next ones wait in the kernel's accept queue, where they hold no file
// descriptor of the gateway, so the descriptors loom's pipes need stay
// free however many connections clients open.
//
// So a silent connection holds its slot at most silentGrace once the cap
// is reached (--read-header-timeout otherwise), a request at most the
// server's read and write deadlines, an idle one until a new connection
// needs the slot or --idle-timeout passes.
type connLimit struct {
	max     int
	slots   chan struct{}
	done    chan struct{}
	idled   chan struct{} // a connection turned idle (buffered, one)
	closing sync.Once
	waited  atomic.Int64 // Accepts that found every slot taken
	evicted atomic.Int64 // idle connections closed to free a slot
	hushed  atomic.Int64 // silent new connections closed to free a slot

	mu     sync.Mutex
	idle   map[net.Conn]struct{}
	silent map[net.Conn]time.Time // new connections, by when they came
}

func newConnLimit(max int) *connLimit {
	return &connLimit{
		max:    max,
		slots:  make(chan struct{}, max),
		done:   make(chan struct{}),
		idled:  make(chan struct{}, 1),
		idle:   make(map[net.Conn]struct{}),
		silent: make(map[net.Conn]time.Time),
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
// are idle, and which are new and have not sent a request yet.
func (l *connLimit) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.silent, c)
	switch s {
	case http.StateNew:
		l.silent[c] = time.Now()
	case http.StateIdle:
		l.idle[c] = struct{}{}
		select {
		case l.idled <- struct{}{}:
		default:
		}
		return
	}
	delete(l.idle, c)
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
		evicted, due := l.evict(time.Now())
		if evicted {
			continue // its slot is free now
		}
		if got, err := l.wait(due); got || err != nil {
			return err
		}
	}
}

// wait takes a slot as soon as one is free, and reports whether it did;
// it returns without one when a connection turns idle or due passes (0:
// no deadline), and fails once the listener is closed.
func (l *connLimit) wait(due time.Duration) (got bool, err error) {
	var silentDue <-chan time.Time
	if due > 0 {
		t := time.NewTimer(due)
		defer t.Stop()
		silentDue = t.C
	}
	select {
	case l.slots <- struct{}{}:
		return true, nil
	case <-l.idled:
	case <-silentDue:
	case <-l.done:
		return false, net.ErrClosed
	}
	return false, nil
}

// evict closes one idle connection, else the oldest silent one past
// silentGrace, and reports whether it closed one; when it did not, due is
// how long until the oldest silent connection passes silentGrace (0: there
// is none).
func (l *connLimit) evict(now time.Time) (evicted bool, due time.Duration) {
	l.mu.Lock()
	var victim net.Conn
	for c := range l.idle {
		victim = c
		delete(l.idle, c)
		break
	}
	counter := &l.evicted
	if victim == nil {
		var oldest time.Time
		for c, since := range l.silent {
			if victim == nil || since.Before(oldest) {
				victim, oldest = c, since
			}
		}
		if victim != nil {
			if age := now.Sub(oldest); age < silentGrace {
				l.mu.Unlock()
				return false, silentGrace - age
			}
			delete(l.silent, victim)
			counter = &l.hushed
		}
	}
	l.mu.Unlock()
	if victim == nil {
		return false, 0
	}
	counter.Add(1)
	_ = victim.Close()
	return true, 0
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
func fdReserve(maxConcurrentLoom int) int { return 4*min(maxConcurrentLoom, maxFlagCount) + 256 }

// maxFlagCount bounds a count flag in the descriptor arithmetic, so that
// it cannot overflow; it is far above any descriptor limit.
const maxFlagCount = 1 << 40

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
			n := min(flagValue, maxFlagCount)
			return 0, usagef("--max-connections %d: two listeners at %d connections each and %d loom processes need about %d open files; the limit is %d (raise ulimit -n, or lower --max-connections to %d or less)",
				flagValue, flagValue, maxConcurrentLoom, 2*n+reserve, limit, max(room, 0))
		}
		return flagValue, nil
	}
	if room < 16 {
		return 0, usagef("the open-file limit %d leaves room for %d connections per listener after %d loom processes; raise ulimit -n or lower --max-concurrent-loom", limit, max(room, 0), maxConcurrentLoom)
	}
	return min(dflt, room), nil
}
