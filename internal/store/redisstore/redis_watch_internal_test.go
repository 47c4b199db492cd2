package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/store"
)

// watchLog records one WatchDeletes and stops it at the test's end.
type watchLog struct {
	mu         sync.Mutex
	deleted    []string
	subscribed int
	failed     []error
}

func startWatch(t *testing.T, s *Store) *watchLog {
	t.Helper()
	l := &watchLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchDeletes(ctx, store.DeleteWatch{
			Deleted:    func(id string) { l.mu.Lock(); l.deleted = append(l.deleted, id); l.mu.Unlock() },
			Subscribed: func() { l.mu.Lock(); l.subscribed++; l.mu.Unlock() },
			Failed:     func(err error) { l.mu.Lock(); l.failed = append(l.failed, err); l.mu.Unlock() },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("WatchDeletes did not return within 5s of its context's end")
		}
	})
	return l
}

// waitFor waits up to 15s for cond on l.
func (l *watchLog) waitFor(t *testing.T, what string, cond func(l *watchLog) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		l.mu.Lock()
		ok := cond(l)
		state := fmt.Sprintf("deleted %q, %d subscriptions, failures %v", l.deleted, l.subscribed, l.failed)
		l.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deleteThrough creates and deletes a run through s.
func deleteThrough(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateRun(ctx, store.Run{ID: id, TokenHash: store.HashToken(id), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestRedisWatchIdle leaves the subscription silent for many idle periods:
// the pings keep it, with no failure and no new subscription, and it still
// receives.
func TestRedisWatchIdle(t *testing.T) {
	s, c := internalRedis(t)
	s.watchIdle = 50 * time.Millisecond
	other := New(c, Options{Prefix: s.prefix})
	l := startWatch(t, s)
	l.waitFor(t, "the subscription", func(l *watchLog) bool { return l.subscribed == 1 })
	time.Sleep(time.Second) // 20 idle periods
	deleteThrough(t, other, "after-silence")
	l.waitFor(t, "the delete", func(l *watchLog) bool { return len(l.deleted) == 1 })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subscribed != 1 || len(l.failed) != 0 {
		t.Errorf("after 20 idle periods: %d subscriptions, failures %v; want 1 and none", l.subscribed, l.failed)
	}
}

// TestRedisWatchReconnects kills the watch's connection on the server
// (CLIENT KILL): the watch reports the failure, subscribes again, and
// receives the deletes made after that.
func TestRedisWatchReconnects(t *testing.T) {
	opt := testRedisOptions(t)
	_, admin := internalRedis(t)
	name := fmt.Sprintf("loom-gateway-watch-test-%d", time.Now().UnixNano())
	opt.ClientName = name
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	prefix := name + ":"
	s := New(c, Options{Prefix: prefix})
	other := New(admin, Options{Prefix: prefix})

	l := startWatch(t, s)
	l.waitFor(t, "the subscription", func(l *watchLog) bool { return l.subscribed == 1 })
	deleteThrough(t, other, "before")
	l.waitFor(t, "the first delete", func(l *watchLog) bool { return len(l.deleted) == 1 })

	// Kill the connections of our client that are subscribed.
	list, err := admin.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		f := clientFields(line)
		if f["name"] == name && f["sub"] != "0" && f["sub"] != "" {
			if err := admin.Do(context.Background(), "CLIENT", "KILL", "ID", f["id"]).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d subscribed connections named %s, want 1:\n%s", killed, name, list)
	}
	l.waitFor(t, "a failure and a new subscription", func(l *watchLog) bool { return len(l.failed) >= 1 && l.subscribed >= 2 })
	deleteThrough(t, other, "after")
	l.waitFor(t, "the delete after the reconnection", func(l *watchLog) bool { return slices.Contains(l.deleted, "after") })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.failed {
		if !errors.Is(err, store.ErrStoreUnavailable) {
			t.Errorf("failure %v, want ErrStoreUnavailable", err)
		}
	}
	if !slices.Equal(l.deleted, []string{"before", "after"}) {
		t.Errorf("reported %q, want [before after]", l.deleted)
	}
}

// clientFields parses one line of CLIENT LIST.
func clientFields(line string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Fields(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// stallProxy forwards TCP connections to Redis, and while stalled holds
// every byte in both directions, as a network that drops packets does: the
// connections stay open and nothing arrives.
type stallProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	stalled bool
	resume  chan struct{} // closed when the stall ends
	conns   []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, resume: make(chan struct{})}
	close(p.resume)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p
}

func (p *stallProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			resume := p.resume
			p.mu.Unlock()
			<-resume
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled, p.resume = true, make(chan struct{})
	}
}

func (p *stallProxy) unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resume)
	}
}

// TestRedisWatchDeadConnection stalls the network between the watch and
// Redis: the unanswered ping makes the watch report a failure and
// subscribe again (failing while the stall lasts), and once the network
// is back it receives again.
func TestRedisWatchDeadConnection(t *testing.T) {
	opt := testRedisOptions(t)
	_, admin := internalRedis(t)
	proxy := newStallProxy(t, opt.Addr)
	opt.Addr = proxy.ln.Addr().String()
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	prefix := fmt.Sprintf("loom-gateway-itest:%d:", time.Now().UnixNano())
	s := New(c, Options{Prefix: prefix})
	s.watchIdle = 200 * time.Millisecond
	other := New(admin, Options{Prefix: prefix})

	l := startWatch(t, s)
	l.waitFor(t, "the subscription", func(l *watchLog) bool { return l.subscribed == 1 })
	proxy.stall()
	deleteThrough(t, other, "while-stalled") // held by the network, then lost with the connection
	l.waitFor(t, "a failure", func(l *watchLog) bool { return len(l.failed) >= 1 })
	l.mu.Lock()
	first := l.failed[0]
	l.mu.Unlock()
	if !errors.Is(first, store.ErrStoreUnavailable) || !strings.Contains(first.Error(), errNoPong.Error()) {
		t.Errorf("first failure %v, want ErrStoreUnavailable and %q", first, errNoPong)
	}
	proxy.unstall()
	l.waitFor(t, "a new subscription", func(l *watchLog) bool { return l.subscribed >= 2 })
	deleteThrough(t, other, "after")
	l.waitFor(t, "the delete after the stall", func(l *watchLog) bool { return slices.Contains(l.deleted, "after") })
}
