package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/store"
)

// Timing of WatchDeletes (fields of Redis, so that tests can shorten them).
const (
	// watchIdle is how long the subscription may be silent before the
	// watch pings Redis, and then how long the pong may take before the
	// connection is taken for dead.
	watchIdle = 5 * time.Second
	// watchBackoff is the first wait before subscribing again after a
	// failure; it doubles while failures follow each other, up to
	// watchMaxBackoff.
	watchBackoff    = 100 * time.Millisecond
	watchMaxBackoff = 2 * time.Second
)

var (
	errNoPong        = errors.New("no answer to ping")
	errNotSubscribed = errors.New("subscription not confirmed")
)

// deletedChannel is the pub/sub channel of run deletions.
func (s *Store) deletedChannel() string { return s.prefix + "deleted" }

// deletedMessage is what DeleteRun publishes for the run id: the store's
// origin and the id, nothing else.
func (s *Store) deletedMessage(id string) string { return s.origin + " " + id }

// deletedRun returns the run id of a delete message published by another
// store, and false for one of this store's own or a malformed one.
func (s *Store) deletedRun(msg string) (string, bool) {
	origin, id, ok := strings.Cut(msg, " ")
	if !ok || origin == s.origin || id == "" {
		return "", false
	}
	return id, true
}

// WatchDeletes reports in w, until ctx is done, the runs deleted through
// another Redis store on the same Redis (or Cluster) and prefix: the other
// replicas of the deployment, or another Redis value in this process. A
// delete through s itself is not reported, nor is a run that expires. It
// returns when ctx is done. See DeleteWatch.
//
// DeleteRun publishes, in the script that deletes the run, one message on
// the channel Pdeleted (P the prefix): the publishing store's origin (eight
// random bytes in hex, drawn by NewRedis) and the run id. Nothing else,
// never a token or its hash. WatchDeletes subscribes to the channel on a
// connection of its own (on a Cluster, the node of the channel's slot;
// Redis Cluster forwards every PUBLISH to every node).
//
// Pub/sub delivers at most once: a message published while the watch is
// not subscribed (Redis restarting, the connection lost) is lost for it,
// and w.Subscribed marks each new start. A subscription silent for
// watchIdle is pinged; one that does not answer within watchIdle again, or
// fails in any way, is closed, w.Failed is told why, and the watch
// subscribes again after a backoff (watchBackoff doubling up to
// watchMaxBackoff).
//
// The Redis user of the gateway needs SUBSCRIBE and PUBLISH on the
// channel. Without them deletes still work (the publish is not checked)
// and w.Failed reports the refused subscription each time it is tried.
func (s *Store) WatchDeletes(ctx context.Context, w store.DeleteWatch) {
	backoff := s.watchBackoff
	for {
		subscribed, err := s.watchOnce(ctx, w)
		if ctx.Err() != nil {
			return
		}
		if w.Failed != nil {
			w.Failed(fmt.Errorf("store: redis watch deletes: %w: %w", store.ErrStoreUnavailable, err))
		}
		if subscribed {
			backoff = s.watchBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.watchMaxBackoff)
	}
}

// watchOnce is one subscription of WatchDeletes, from SUBSCRIBE to its
// first failure (returned), or until ctx is done (nil). subscribed reports
// whether Redis confirmed it.
func (s *Store) watchOnce(ctx context.Context, w store.DeleteWatch) (subscribed bool, err error) {
	channel := s.deletedChannel()
	// Subscribe sends SUBSCRIBE when it can connect; when it cannot, the
	// first receive below tries again and returns the error.
	ps := s.c.Subscribe(ctx, channel)
	// A blocked receive ends when the connection closes.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer func() {
		stop()
		_ = ps.Close()
	}()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, s.watchIdle)
		if ctx.Err() != nil {
			return subscribed, nil
		}
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return subscribed, err
			}
			if pinged {
				return subscribed, errNoPong
			}
			pinged = true
			if err := ps.Ping(ctx); err != nil {
				return subscribed, err
			}
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == channel {
				subscribed = true
				if w.Subscribed != nil {
					w.Subscribed()
				}
			}
		case *redis.Pong:
			// SUBSCRIBE went out before the PING, so its confirmation
			// comes first; without one the connection holds no
			// subscription.
			if !subscribed {
				return false, errNotSubscribed
			}
		case *redis.Message:
			if id, ok := s.deletedRun(m.Payload); ok && w.Deleted != nil {
				w.Deleted(id)
			}
		}
	}
}
