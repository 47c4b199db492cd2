// Package redisstore is the run store shared by gateway replicas:
// store.Store over Redis or Redis Cluster (go-redis).
package redisstore

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/storecodec"
)

var _ store.Store = (*Store)(nil)

// Options configures a Store. The zero value is usable.
type Options struct {
	// MaxRuns caps the number of live runs across every replica sharing the
	// Redis and prefix; <= 0 means no cap.
	MaxRuns int
	// Prefix starts every key; "" means "loom-gateway:". Replicas that
	// share runs use the same prefix. It should hold no '{' (a hash tag in
	// the prefix would put every key in one Cluster slot).
	Prefix string
	// Now is the clock runs expire by; nil means time.Now.
	Now func() time.Time
	// MaxLabelClauses caps the clauses of a run's model-context label
	// (Observe); <= 0 means no cap.
	MaxLabelClauses int
}

// DefaultRedisPrefix is the key prefix when Options.Prefix is empty.
const DefaultRedisPrefix = "loom-gateway:"

// Store is the store.Store shared by gateway replicas: every run lives in Redis
// (or Redis Cluster), so any replica can serve any run and one can die
// without losing a run.
//
// Keys (P is the prefix). The keys of one run share the hash tag {id}, so a
// Cluster keeps a run on one shard (the API's run ids hold no braces):
//
//	Prun:{id}      hash: tok (SHA-256 of the run token), created, expires,
//	               expus, pxat, ceil, tools, mc (model-context label), seq,
//	               hb (the handle table's held bytes, Run.HandleBytes)
//	Pcalls:{id}    list of call records
//	Phandles:{id}  hash: 'i'+identity digest -> token suffix,
//	               't'+token suffix -> referent record
//	Porder:{id}    list of token suffixes in minting order
//	Presult:{id}   the result record
//	Pflight:{id}   sorted set: the output numbers in flight (Begin's
//	               marks), scored by when each mark expires (µs)
//
// The index of live runs has its own tag, {idx}, so that creating a run is
// one atomic step across the id, the token hash and the run limit:
//
//	P{idx}runs       sorted set: run id, scored by its expiry (µs; +inf never)
//	P{idx}tok:<hex>  run id, under the hex SHA-256 of its token
//	P{idx}created    sorted set: run id, scored by its CreatedAt (µs), the
//	                 order RunsPage reads
//
// and DeleteRun publishes on the pub/sub channel Pdeleted (see
// WatchDeletes).
//
// Atomicity: every method is one Lua script (EVALSHA) on one slot, except
// Observe, which reads the label, joins in Go (ifc.JoinModelContext) and
// writes with a compare-and-set script, retrying when another replica
// changed the label in between; and CreateRun and DeleteRun, which take
// two scripts, one on the index slot and one on the run's slot (see
// CreateRun). Mint computes the token candidates in Go (MintToken attempts)
// and a script picks the first free one, so dedupe, collision
// re-derivation, the cap and all-or-nothing happen in one step.
//
// Expiry: every key of a run gets PEXPIREAT at ExpiresAt (rounded up to the
// millisecond) when it is created, so Redis gives the memory back by
// itself; each script also compares ExpiresAt with Now (to the
// microsecond), so a run is gone at ExpiresAt by the store's clock, as in
// Memory.
//
// Errors: a Redis that cannot be reached, or answers with an error, makes a
// method return an error wrapping ErrStoreUnavailable (and the go-redis
// error); a cancelled ctx returns the context's error. Writes are sent
// once (go-redis does not replay them after a lost reply), so a failure
// never doubles a call, an output number or a result. Redis is safe for
// concurrent use by any number of goroutines and replicas.
type Store struct {
	c       redis.UniversalClient
	now     func() time.Time
	maxRuns int
	// maxClauses is RedisOptions.MaxLabelClauses.
	maxClauses int
	prefix     string
	// candidates is Mint's first number of token candidates per referent
	// (mintCandidates; tests lower it to reach the retry).
	candidates int
	// origin names this store in the delete messages it publishes, so
	// that its own watch skips them: random, not secret.
	origin string
	// WatchDeletes' timing (watchIdle, watchBackoff, watchMaxBackoff).
	watchIdle, watchBackoff, watchMaxBackoff time.Duration
	// tips is what the store last saw of its runs' chains (chain.go).
	tips tips
}

// NewRedis returns a store on the client. The client's options decide
// addresses, TLS, credentials, pool and timeouts; the store never closes it.
func New(client redis.UniversalClient, opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	var o [8]byte
	_, _ = crand.Read(o[:])
	return &Store{c: client, now: now, maxRuns: opts.MaxRuns, maxClauses: opts.MaxLabelClauses, prefix: prefix, candidates: mintCandidates,
		origin:    hex.EncodeToString(o[:]),
		watchIdle: watchIdle, watchBackoff: watchBackoff, watchMaxBackoff: watchMaxBackoff}
}

// runKeys are the keys of one run.
type runKeys struct{ run, calls, handles, order, result, flight, chain string }

func (s *Store) keys(id string) runKeys {
	tag := "{" + id + "}"
	return runKeys{
		run:     s.prefix + "run:" + tag,
		calls:   s.prefix + "calls:" + tag,
		handles: s.prefix + "handles:" + tag,
		order:   s.prefix + "order:" + tag,
		result:  s.prefix + "result:" + tag,
		flight:  s.prefix + "flight:" + tag,
		chain:   s.prefix + "chain:" + tag,
	}
}

func (s *Store) runsKey() string { return s.prefix + "{idx}runs" }

// createdKey is the index of RunsPage: run id scored by its CreatedAt in
// microseconds (exact in a double until the year 2255), so a zset's order,
// by score and then by the member's bytes, is store.CompareRuns.
func (s *Store) createdKey() string { return s.prefix + "{idx}created" }

func (s *Store) tokKey(h store.TokenHash) string {
	return s.prefix + "{idx}tok:" + hex.EncodeToString(h[:])
}

// nowUS is the store's clock in whole microseconds, as the scripts compare.
func (s *Store) nowUS() int64 { return s.now().UnixMicro() }

// micros is t in microseconds, rounded down like nowUS, so that a run is
// gone when its ExpiresAt and the clock fall in the same microsecond.
func micros(t time.Time) int64 { return t.UnixMicro() }

// pxat is the PEXPIREAT argument for t: milliseconds, rounded up so that no
// key dies before its run expires.
func pxat(t time.Time) string {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return strconv.FormatInt(ms, 10)
}

// ---- calling Redis ----

// writeCmd marks a command that go-redis must not send again after a
// failure once it may have reached the server: a replayed script could
// count an output twice or refuse a result it had just stored.
type writeCmd struct{ *redis.Cmd }

func (writeCmd) NoRetry() bool { return true }

// eval runs a script by its SHA, loading it when the server does not have
// it. Writes are sent once (writeCmd); reads may be retried by go-redis.
func (s *Store) eval(ctx context.Context, write bool, sc *luaScript, keys []string, args ...any) (any, error) {
	run := func(name string, first any) (any, error) {
		a := make([]any, 0, 3+len(keys)+len(args))
		a = append(a, name, first, len(keys))
		for _, k := range keys {
			a = append(a, k)
		}
		a = append(a, args...)
		cmd := redis.NewCmd(ctx, a...)
		var c redis.Cmder = cmd
		if write {
			c = writeCmd{cmd}
		}
		_ = s.c.Process(ctx, c)
		return cmd.Result()
	}
	v, err := run("evalsha", sc.sha)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = run("eval", sc.src)
	}
	return v, err
}

// fail wraps a Redis error: the context's error when ctx is done,
// ErrStoreUnavailable otherwise.
func fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("store: redis %s: %w", op, err)
	}
	return fmt.Errorf("store: redis %s: %w: %w", op, store.ErrStoreUnavailable, err)
}

// corrupt reports a reply or record the store cannot read, which only a
// foreign writer under the same prefix (or a bug) produces.
func corrupt(op string, err error) error {
	return fmt.Errorf("store: redis %s: %w: %w", op, store.ErrStoreUnavailable, err)
}

var errReply = errors.New("store: redis: unexpected reply")

// status returns a script's integer status, and ok=false for any other
// reply.
func status(v any) (int64, bool) {
	n, ok := v.(int64)
	return n, ok
}

func asSlice(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok
}

// ---- runs ----

// CreateRun stores r (counters zeroed). It returns ErrRunExists if a live
// run has the id or the token hash, ErrRunLimit if MaxRuns live runs are
// stored, or ErrStoreUnavailable.
//
// It is two atomic steps: the index script takes the id and token hash and
// counts the live runs (on the {idx} slot), then the run script writes the
// run's keys (on the {id} slot). Between them the run does not exist yet for
// any reader. If the second step fails, the first is undone; if that fails
// too (Redis went away in between), the reservation holds the id and a
// place under MaxRuns until the run's expiry, and nothing else is visible.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	now := s.nowUS()
	score, at := "+inf", ""
	if !r.ExpiresAt.IsZero() {
		score, at = strconv.FormatInt(micros(r.ExpiresAt), 10), pxat(r.ExpiresAt)
	}
	idx := []string{s.runsKey(), s.tokKey(r.TokenHash), s.createdKey()}
	v, err := s.eval(ctx, true, scriptReserve, idx, r.ID, now, score, s.maxRuns, at, micros(r.CreatedAt))
	if err != nil {
		return fail(ctx, "create run", err)
	}
	switch n, _ := status(v); n {
	case 0:
	case 1:
		return store.ErrRunExists
	case 2:
		return store.ErrRunLimit
	default:
		return corrupt("create run", errReply)
	}

	k := s.keys(r.ID)
	args := []any{at,
		"tok", r.TokenHash[:],
		"created", storecodec.EncodeTime(r.CreatedAt),
	}
	if !r.ExpiresAt.IsZero() {
		args = append(args, "expires", storecodec.EncodeTime(r.ExpiresAt), "expus", micros(r.ExpiresAt), "pxat", at)
	}
	if r.Ceiling.Defined() {
		args = append(args, "ceil", storecodec.EncodeConf(r.Ceiling.Clauses()))
	}
	if r.Tools != nil {
		args = append(args, "tools", storecodec.EncodeStrs(r.Tools))
	}
	if len(r.ModelContext) > 0 {
		args = append(args, "mc", storecodec.EncodeConf(r.ModelContext))
	}
	if _, err := s.eval(ctx, true, scriptCreate, []string{k.run, k.calls, k.handles, k.order, k.result, k.flight, k.chain}, args...); err != nil {
		// Undo the reservation, even if ctx is done.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_, _ = s.eval(uctx, true, scriptUnindex, idx, r.ID)
		cancel()
		return fail(ctx, "create run", err)
	}
	return nil
}

// Run returns the run with the id, or ErrRunNotFound or
// ErrStoreUnavailable.
func (s *Store) Run(ctx context.Context, id string) (store.Run, error) {
	k := s.keys(id)
	v, err := s.eval(ctx, false, scriptGet, []string{k.run, k.calls, k.order, k.result}, s.nowUS())
	if err != nil {
		return store.Run{}, fail(ctx, "run", err)
	}
	return decodeRunReply(id, v)
}

// decodeRunReply turns scriptGet's reply (luaReadRun) into a Run.
func decodeRunReply(id string, v any) (store.Run, error) {
	if n, ok := status(v); ok && n == -1 {
		return store.Run{}, store.ErrRunNotFound
	}
	a, ok := asSlice(v)
	if !ok || len(a) != 4 {
		return store.Run{}, corrupt("run", errReply)
	}
	fields, ok := asSlice(a[0])
	if !ok || len(fields) != len(runFields) {
		return store.Run{}, corrupt("run", errReply)
	}
	calls, ok1 := status(a[1])
	handles, ok2 := status(a[2])
	hasResult, ok3 := status(a[3])
	if !ok1 || !ok2 || !ok3 {
		return store.Run{}, corrupt("run", errReply)
	}
	r := store.Run{ID: id, Calls: int(calls), Handles: int(handles), HasResult: hasResult == 1}
	var err error
	for i := 0; i < len(fields) && err == nil; i++ {
		val, set := fields[i].(string)
		if !set {
			continue
		}
		switch runFields[i] {
		case "tok":
			if len(val) != len(r.TokenHash) {
				err = storecodec.ErrCorrupt
			}
			copy(r.TokenHash[:], val)
		case "created":
			r.CreatedAt, err = storecodec.DecodeTime([]byte(val))
		case "expires":
			r.ExpiresAt, err = storecodec.DecodeTime([]byte(val))
		case "ceil":
			var c ifc.Confidentiality
			c, err = storecodec.DecodeConf([]byte(val))
			r.Ceiling = ifc.CeilingOf(c)
		case "tools":
			r.Tools, err = storecodec.DecodeStrs([]byte(val))
		case "mc":
			r.ModelContext, err = storecodec.DecodeConf([]byte(val))
		case "seq":
			r.Seq, err = strconv.ParseInt(val, 10, 64)
		case "hb":
			r.HandleBytes, err = strconv.ParseInt(val, 10, 64)
		}
	}
	if err != nil {
		return store.Run{}, corrupt("run", err)
	}
	return r, nil
}

// RunByToken returns the live run whose token hashes to h, or
// ErrRunNotFound or ErrStoreUnavailable.
func (s *Store) RunByToken(ctx context.Context, h store.TokenHash) (store.Run, error) {
	id, err := s.c.Get(ctx, s.tokKey(h)).Result()
	if errors.Is(err, redis.Nil) {
		return store.Run{}, store.ErrRunNotFound
	}
	if err != nil {
		return store.Run{}, fail(ctx, "run by token", err)
	}
	r, err := s.Run(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	// The index may still name an id whose run was since recreated with
	// another token.
	if r.TokenHash != h {
		return store.Run{}, store.ErrRunNotFound
	}
	return r, nil
}

// Runs returns the live runs, oldest CreatedAt first, ties by ID, or
// ErrStoreUnavailable.
func (s *Store) Runs(ctx context.Context) ([]store.Run, error) {
	now := s.nowUS()
	ids, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.runsKey(), ByScore: true, Start: "(" + strconv.FormatInt(now, 10), Stop: "+inf",
	}).Result()
	if err != nil {
		return nil, fail(ctx, "runs", err)
	}
	out, err := s.runsOf(ctx, ids, now)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, store.CompareRuns)
	return out, nil
}

// runsOf reads the runs of ids at now, in the order of ids, leaving out
// those gone (deleted, expired, or a reservation not yet written).
func (s *Store) runsOf(ctx context.Context, ids []string, now int64) ([]store.Run, error) {
	if len(ids) == 0 {
		return []store.Run{}, nil
	}
	// One pipeline of EVALSHA (go-redis splits it by slot on a Cluster);
	// if a server lacks the script, load it everywhere and go again.
	for loaded := false; ; loaded = true {
		cmds := make([]*redis.Cmd, len(ids))
		_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				k := s.keys(id)
				cmds[i] = p.EvalSha(ctx, scriptGet.sha, []string{k.run, k.calls, k.order, k.result}, now)
			}
			return nil
		})
		out := make([]store.Run, 0, len(ids))
		for i, cmd := range cmds {
			v, err := cmd.Result()
			if err != nil && !loaded && redis.HasErrorPrefix(err, "NOSCRIPT") {
				if err := s.c.ScriptLoad(ctx, scriptGet.src).Err(); err != nil {
					return nil, fail(ctx, "runs", err)
				}
				out = nil
				break
			}
			if err != nil {
				return nil, fail(ctx, "runs", err)
			}
			r, err := decodeRunReply(ids[i], v)
			if errors.Is(err, store.ErrRunNotFound) {
				continue // deleted meanwhile, or a reservation not yet written
			}
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		if out != nil {
			return out, nil
		}
	}
}

// CountRuns returns the number of live runs (and reservations not yet
// written) from the index, reading no run, or ErrStoreUnavailable.
func (s *Store) CountRuns(ctx context.Context) (int, error) {
	n, err := s.c.ZCount(ctx, s.runsKey(), "("+strconv.FormatInt(s.nowUS(), 10), "+inf").Result()
	if err != nil {
		return 0, fail(ctx, "count runs", err)
	}
	return int(n), nil
}

// RunsPage returns at most limit live runs after the key after, in Runs'
// order, and whether more may follow, or ErrStoreUnavailable. It reads
// the created index from after on, a page and one more at a time, and
// then those runs; ids whose runs are gone are skipped, and it reads on
// until the page is full or the index ends.
func (s *Store) RunsPage(ctx context.Context, after store.RunKey, limit int) ([]store.Run, bool, error) {
	limit = max(limit, 1)
	now := s.nowUS()
	out := make([]store.Run, 0, limit+1)
	for {
		ids, last, done, err := s.pageIDs(ctx, after, limit+1-len(out))
		if err != nil {
			return nil, false, err
		}
		runs, err := s.runsOf(ctx, ids, now)
		if err != nil {
			return nil, false, err
		}
		out = append(out, runs...)
		if len(out) > limit {
			return out[:limit], true, nil
		}
		if done {
			return out, false, nil
		}
		after = last
	}
}

// pageIDs reads up to n ids of the created index after the key after, in
// order, the key of the last one, and whether the index ends there. A
// zset orders equal scores by the member's bytes, as store.CompareRuns
// orders equal times by id; the members of after's own score are read
// whole and those up to after.ID left out here (Lua's string order
// follows the server's locale).
func (s *Store) pageIDs(ctx context.Context, after store.RunKey, n int) ([]string, store.RunKey, bool, error) {
	key := s.createdKey()
	at := strconv.FormatInt(micros(after.CreatedAt), 10)
	var eq, gt *redis.ZSliceCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		start := "-inf"
		if after.ID != "" {
			eq = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, ByScore: true, Start: at, Stop: at})
			start = "(" + at
		}
		gt = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, ByScore: true, Start: start, Stop: "+inf", Count: int64(n)})
		return nil
	})
	if err != nil {
		return nil, store.RunKey{}, false, fail(ctx, "runs page", err)
	}
	var zs []redis.Z
	if eq != nil {
		for _, z := range eq.Val() {
			if id, _ := z.Member.(string); id > after.ID {
				zs = append(zs, z)
			}
		}
	}
	more := gt.Val()
	zs = append(zs, more...)
	done := len(more) < n && len(zs) <= n
	zs = zs[:min(n, len(zs))]
	ids := make([]string, len(zs))
	var last store.RunKey
	for i, z := range zs {
		ids[i], _ = z.Member.(string)
		last = store.RunKey{CreatedAt: time.UnixMicro(int64(z.Score)), ID: ids[i]}
	}
	return ids, last, done, nil
}

// DeleteRun removes the run and all its state, or returns ErrRunNotFound or
// ErrStoreUnavailable. The run's keys go in one step, which also publishes
// the run id to the other stores' WatchDeletes; its index entries in a
// second one (if that fails, they name a run that is gone, which no reader
// returns, until the run's expiry).
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	k := s.keys(id)
	v, err := s.eval(ctx, true, scriptDelete, []string{k.run, k.calls, k.handles, k.order, k.result, k.flight, k.chain},
		s.nowUS(), s.deletedChannel(), s.deletedMessage(id))
	if err != nil {
		return fail(ctx, "delete run", err)
	}
	if n, ok := status(v); ok && n == -1 {
		return store.ErrRunNotFound
	}
	tok, ok := v.(string)
	if !ok || len(tok) != sha256.Size {
		return corrupt("delete run", errReply)
	}
	var h store.TokenHash
	copy(h[:], tok)
	if _, err := s.eval(ctx, true, scriptUnindex, []string{s.runsKey(), s.tokKey(h), s.createdKey()}, id); err != nil {
		return fail(ctx, "delete run", err)
	}
	return nil
}

// ---- sequence, label, call log ----

// NextOutput increments the run's output sequence and returns it, or
// ErrRunNotFound or ErrStoreUnavailable.
func (s *Store) NextOutput(ctx context.Context, id string) (int64, error) {
	v, err := s.eval(ctx, true, scriptNext, []string{s.keys(id).run}, s.nowUS())
	if err != nil {
		return 0, fail(ctx, "next output", err)
	}
	n, ok := status(v)
	switch {
	case !ok:
		return 0, corrupt("next output", errReply)
	case n == -1:
		return 0, store.ErrRunNotFound
	}
	return n, nil
}

// Begin checks b.Token, takes a call from the run's rate bucket, the
// next output number and, under b.MaxInFlight, an in-flight mark in one
// script, and returns the run as it then stands, its Seq the number
// taken and Marked whether the mark was; ErrRunNotFound, ErrOutputLimit
// or a *store.RateLimitError with nothing taken, or
// ErrStoreUnavailable. The bucket lives in the run's hash and the marks
// in its flight set, so every replica on the Redis shares them; the
// bucket is refilled, and a mark's lease runs, by the calling store's
// clock, and a clock behind the last call's refills nothing. A Begin of
// b.NoOutput runs a script of its own (scriptAdmit) that takes only the
// call from the bucket, and runs when Redis is full.
func (s *Store) Begin(ctx context.Context, id string, b store.Begin) (store.Run, error) {
	k := s.keys(id)
	per := strconv.FormatFloat(max(b.Rate.PerSecond, 0), 'g', -1, 64)
	var tok []byte
	if b.Token != nil {
		tok = b.Token[:]
	}
	var v any
	var err error
	if b.NoOutput {
		v, err = s.eval(ctx, true, scriptAdmit, []string{k.run, k.calls, k.order, k.result}, s.nowUS(), per, b.Rate.Burst, tok)
	} else {
		v, err = s.eval(ctx, true, scriptBegin, []string{k.run, k.calls, k.order, k.result, k.flight},
			s.nowUS(), per, b.Rate.Burst, tok, max(b.MaxCalls, 0), max(b.MaxInFlight, 0), max(b.Lease.Microseconds(), 0))
	}
	if err != nil {
		return store.Run{}, fail(ctx, "begin", err)
	}
	if n, ok := status(v); ok && n == -3 {
		return store.Run{}, store.ErrCallLimit
	}
	a, ok := asSlice(v)
	if ok && len(a) == 2 {
		if n, _ := status(a[0]); n == -2 {
			us, _ := status(a[1])
			return store.Run{}, &store.RateLimitError{RetryAfter: time.Duration(max(us, 1)) * time.Microsecond}
		}
	}
	if !ok || b.NoOutput {
		return decodeRunReply(id, v)
	}
	if len(a) != 5 {
		return store.Run{}, corrupt("begin", errReply)
	}
	marked, _ := status(a[4])
	r, err := decodeRunReply(id, a[:4])
	r.Marked = err == nil && marked == 1
	return r, err
}

// Release drops the run's in-flight mark of output number mark, or
// returns ErrStoreUnavailable. The script only frees data, so it runs on
// a full Redis.
func (s *Store) Release(ctx context.Context, id string, mark int64) error {
	if _, err := s.eval(ctx, true, scriptUnmark, []string{s.keys(id).flight}, mark); err != nil {
		return fail(ctx, "release", err)
	}
	return nil
}

// maxSwaps bounds Observe's compare-and-set attempts; each failed attempt
// means another caller's join landed, so only pathological contention
// reaches it.
const maxSwaps = 1000

// Observe joins conf into the run's model-context label
// (ifc.JoinModelContext) and returns the new label, or ErrRunNotFound or
// ErrStoreUnavailable. The join is computed here and written with a
// compare-and-set: when another caller changed the label in between, it is
// joined again on the new value, so no observation is lost.
func (s *Store) Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	key := []string{s.keys(id).run}
	v, err := s.eval(ctx, false, scriptLabel, key, s.nowUS())
	if err != nil {
		return nil, fail(ctx, "observe", err)
	}
	for attempt := 0; ; attempt++ {
		if n, ok := status(v); ok && n == -1 {
			return nil, store.ErrRunNotFound
		}
		cur, ok := v.(string)
		if !ok {
			return nil, corrupt("observe", errReply)
		}
		var prev ifc.Confidentiality
		if cur != "" {
			if prev, err = storecodec.DecodeConf([]byte(cur)); err != nil {
				return nil, corrupt("observe", err)
			}
		}
		next := ifc.JoinModelContext(prev, conf)
		if s.maxClauses > 0 && len(next) > s.maxClauses {
			return nil, store.ErrLabelLimit
		}
		var rec []byte
		if len(next) > 0 {
			rec = storecodec.EncodeConf(next)
		}
		if string(rec) == cur {
			return store.CloneConfidentiality(next), nil // nothing to write; the read was live
		}
		if attempt == maxSwaps {
			return nil, fmt.Errorf("store: redis observe: %w: label changed %d times in a row", store.ErrStoreUnavailable, maxSwaps)
		}
		if attempt > 2 {
			time.Sleep(time.Duration(rand.Int64N(int64(attempt) * int64(50*time.Microsecond))))
		}
		v, err = s.eval(ctx, true, scriptSwapLabel, key, s.nowUS(), cur, rec)
		if err != nil {
			return nil, fail(ctx, "observe", err)
		}
		if n, ok := status(v); ok && n == 0 {
			return store.CloneConfidentiality(next), nil
		}
		if a, ok := asSlice(v); ok && len(a) == 1 {
			v = a[0] // the label another caller wrote: join again
		}
	}
}

// AppendCall records c in the run's call log, or returns ErrRunNotFound or
// ErrStoreUnavailable.
func (s *Store) AppendCall(ctx context.Context, id string, c store.Call) error {
	k := s.keys(id)
	v, err := s.eval(ctx, true, scriptAppendCall, []string{k.run, k.calls}, s.nowUS(), storecodec.EncodeCall(c))
	if err != nil {
		return fail(ctx, "append call", err)
	}
	switch n, _ := status(v); n {
	case 0:
		return nil
	case -1:
		return store.ErrRunNotFound
	}
	return corrupt("append call", errReply)
}

// callsPage is how many call records one scriptCalls reads.
const callsPage = 1000

// CallsPage returns the records of the run's call log after its first
// after, at most limit of them (limit <= 0: all the rest), and the log's
// length, or ErrRunNotFound or ErrStoreUnavailable. It reads the log as it
// stood at the first page, a page (callsPage records) per script, so a
// long log never holds Redis up in one step; the log only grows while the
// run lives, so the pages are one consistent slice. A run deleted, or
// deleted and recreated, between pages answers ErrRunNotFound.
func (s *Store) CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error) {
	k := s.keys(id)
	after = max(after, 0)
	var (
		out   []store.Call
		tok   string
		total int
		end   = -1 // the index past the page's last record, once known
	)
	for end < 0 || after+len(out) < end {
		start := after + len(out)
		stop := start + callsPage - 1
		if end >= 0 {
			stop = min(stop, end-1)
		} else if limit > 0 {
			stop = min(stop, start+limit-1)
		}
		v, err := s.eval(ctx, false, scriptCalls, []string{k.run, k.calls}, s.nowUS(), start, stop)
		if err != nil {
			return nil, 0, fail(ctx, "calls", err)
		}
		if n, ok := status(v); ok && n == -1 {
			return nil, 0, store.ErrRunNotFound
		}
		a, ok := asSlice(v)
		if !ok || len(a) != 3 {
			return nil, 0, corrupt("calls", errReply)
		}
		t, ok1 := a[0].(string)
		n, ok2 := status(a[1])
		recs, ok3 := asSlice(a[2])
		if !ok1 || !ok2 || !ok3 {
			return nil, 0, corrupt("calls", errReply)
		}
		if end < 0 {
			tok, total = t, int(n)
			end = max(total, after)
			if limit > 0 && limit < end-after {
				end = after + limit
			}
			out = make([]store.Call, 0, end-after)
			if len(recs) > end-after {
				return nil, 0, corrupt("calls", errReply)
			}
		} else if t != tok || int(n) < total || len(recs) != stop-start+1 {
			return nil, 0, store.ErrRunNotFound // another run under the id now
		}
		for _, x := range recs {
			rec, _ := x.(string)
			c, err := storecodec.DecodeCall([]byte(rec))
			if err != nil {
				return nil, 0, corrupt("calls", err)
			}
			out = append(out, c)
		}
	}
	return out, total, nil
}

// ---- handles ----

// mintCandidates is how many MintToken attempts Mint sends per referent at
// first; a referent needs a second one only when its first token is held by
// another identity (about one in 24 million per held token). When a
// referent runs out, Mint asks again with four times as many, up to
// maxCandidates.
const (
	mintCandidates = 1
	maxCandidates  = 1 << 12
)

// Mint registers refs (Token ignored) in one atomic step and returns their
// tokens in order (see Store.Mint). It returns ErrRunNotFound,
// ErrHandleLimit with nothing registered, or ErrStoreUnavailable.
func (s *Store) Mint(ctx context.Context, id string, refs []store.Referent, lim store.MintLimits) ([]string, error) {
	m := newMintArgs(id, refs)
	k := s.keys(id)
	toks, _, err := s.minted(ctx, "mint", scriptMint, []string{k.run, k.handles, k.order}, len(refs), func(cands int) []any {
		return m.args([]any{s.nowUS(), lim.Handles, lim.Bytes, cands}, cands)
	})
	return toks, err
}

// minted runs sc, a minting script (scriptMint, scriptFinish), with
// args(k), k candidates per referent, asking again with more while a
// referent runs out, and returns the n tokens it minted. changed is
// scriptFinish's {4, label}: the label it holds, nothing written.
func (s *Store) minted(ctx context.Context, op string, sc *luaScript, keys []string, n int, args func(k int) []any) (toks []string, changed *string, err error) {
	for cands := s.candidates; ; cands *= 4 {
		v, err := s.eval(ctx, true, sc, keys, args(cands)...)
		if err != nil {
			return nil, nil, fail(ctx, op, err)
		}
		if st, ok := status(v); ok {
			switch {
			case st == -1:
				return nil, nil, store.ErrRunNotFound
			case st == 2:
				return nil, nil, store.ErrHandleLimit
			case st == 3 && cands < maxCandidates:
				continue
			}
			return nil, nil, corrupt(op, errReply)
		}
		a, ok := asSlice(v)
		if !ok || len(a) == 0 {
			return nil, nil, corrupt(op, errReply)
		}
		if st, _ := status(a[0]); st == 4 && len(a) == 2 {
			got, _ := a[1].(string)
			return nil, &got, nil
		} else if st == 5 {
			moved, err := readMoved(a)
			if err != nil {
				return nil, nil, corrupt(op, err)
			}
			return nil, nil, moved
		}
		if len(a) != 2 {
			return nil, nil, corrupt(op, errReply)
		}
		sufs, _ := a[1].(string)
		if len(sufs) != n*store.TokenWidth {
			return nil, nil, corrupt(op, errReply)
		}
		// One string holds every token; each is a piece of it.
		w := len(store.ValueTokenPrefix) + store.TokenWidth
		buf := make([]byte, 0, n*w)
		for i := range n {
			buf = append(append(buf, store.ValueTokenPrefix...), sufs[i*store.TokenWidth:(i+1)*store.TokenWidth]...)
		}
		all := string(buf)
		toks = make([]string, n)
		for i := range toks {
			toks[i] = all[i*w : (i+1)*w]
		}
		return toks, nil, nil
	}
}

// mintArgs are what the mint scripts are sent of each referent (luaMint):
// 'i' and its dedupe key (the digest of the first-attempt preimage, as
// Memory keys it), its record, its ReferentBytes (computed here, so both
// stores count alike) and its candidates.
type mintArgs struct {
	id      string
	refs    []store.Referent
	digests [][sha256.Size]byte
	size    int // about what the arguments of one candidate each take
}

func newMintArgs(id string, refs []store.Referent) *mintArgs {
	m := &mintArgs{id: id, refs: refs, digests: make([][sha256.Size]byte, len(refs))}
	var buf []byte
	for i := range refs {
		buf = store.AppendIdentity(append(append(buf[:0], id...), 0), refs[i])
		m.digests[i] = sha256.Sum256(buf)
		m.size += int(store.ReferentBytes(refs[i])) + 80
	}
	return m
}

// args appends to head each referent's arguments with k candidates
// (MintToken attempts 0..k-1).
func (m *mintArgs) args(head []any, k int) []any {
	b := make([]byte, 0, m.size+len(m.refs)*k*store.TokenWidth)
	ends := make([]int, 0, len(m.refs)*(3+k))
	for i := range m.refs {
		b = append(append(b, 'i'), m.digests[i][:]...)
		ends = append(ends, len(b))
		b = storecodec.AppendReferent(b, m.refs[i])
		ends = append(ends, len(b))
		b = strconv.AppendInt(b, store.ReferentBytes(m.refs[i]), 10)
		ends = append(ends, len(b))
		first := store.SuffixOf(&m.digests[i])
		b = append(b, first[:]...)
		ends = append(ends, len(b))
		if k > 1 {
			identity := store.Identity(m.refs[i])
			for attempt := 1; attempt < k; attempt++ {
				suf := store.TokenSuffix(m.id, identity, attempt)
				b = append(b, suf[:]...)
				ends = append(ends, len(b))
			}
		}
	}
	return appendPieces(head, string(b), ends)
}

// appendPieces appends to args the pieces of s that end at ends, each as
// a *string: one string holds them all, and an interface holding a
// pointer costs no allocation.
func appendPieces(args []any, s string, ends []int) []any {
	pieces := make([]string, len(ends))
	from := 0
	for i, end := range ends {
		pieces[i], from = s[from:end], end
	}
	args = slices.Grow(args, len(pieces))
	for i := range pieces {
		args = append(args, &pieces[i])
	}
	return args
}

// Finish mints f.Refs, sets the model-context label, appends the call
// record and drops the in-flight mark f.Mark in one script
// (scriptFinish), and returns the tokens; it returns
// ErrRunNotFound, ErrHandleLimit or ErrLabelLimit with nothing written,
// or ErrStoreUnavailable. The label's join is computed here, first on
// f.Base, and the script writes it only if the label is still the one
// joined into; otherwise it writes nothing and the join is made again on
// the label it returns.
func (s *Store) Finish(ctx context.Context, id string, f store.Finish) ([]string, error) {
	rec, cuts := storecodec.EncodeCallCut(f.Call)
	if len(cuts) != len(f.Refs) {
		return nil, store.ErrFinishShape
	}
	// The record's parts: the token suffix of the i-th referent goes
	// between parts i and i+1.
	var parts []any
	parts = append(parts, len(cuts)+1)
	parts = appendPieces(parts, string(rec), append(cuts, len(rec)))
	m := newMintArgs(id, f.Refs)
	k := s.keys(id)
	keys := []string{k.run, k.handles, k.order, k.calls, k.flight, k.chain}
	mark := ""
	if f.Mark > 0 {
		mark = strconv.FormatInt(f.Mark, 10)
	}
	observe, base := "0", f.Base
	var cur []byte // the label as last read; nil before any read
	if len(base) > 0 {
		cur = storecodec.EncodeConf(base)
	}
	if f.Observed != nil {
		observe = "1"
	}
	// The chain's record, sealed on the tip and tokens guessed (chain.go).
	tip, sufs := s.tips.get(id), m.firstSuffixes()
	sealed, err := sealOn(f.Seal, tokensOf(sufs, len(f.Refs)), tip)
	if err != nil {
		return nil, err
	}
	moves := 0
	for attempt := 0; ; attempt++ {
		var old, next []byte
		if f.Observed != nil {
			joined := ifc.JoinModelContext(base, f.Observed)
			if s.maxClauses > 0 && len(joined) > s.maxClauses {
				// Past the cap on the label as guessed: refused only if it
				// is the label indeed.
				v, err := s.eval(ctx, false, scriptLabel, []string{k.run}, s.nowUS())
				if err != nil {
					return nil, fail(ctx, "finish", err)
				}
				if n, ok := status(v); ok && n == -1 {
					return nil, store.ErrRunNotFound
				}
				got, _ := v.(string)
				if got == string(cur) {
					return nil, store.ErrLabelLimit
				}
				if base, err = decodeLabel(got); err != nil {
					return nil, corrupt("finish", err)
				}
				cur = []byte(got)
				continue
			}
			old = cur
			if len(joined) > 0 {
				next = storecodec.EncodeConf(joined)
			}
		}
		toks, changed, err := s.minted(ctx, "finish", scriptFinish, keys, len(f.Refs), func(cands int) []any {
			head := append([]any{s.nowUS(), f.Limits.Handles, f.Limits.Bytes, cands, observe, old, next, mark}, chainArgs(sealed, tip)...)
			head = append(append(head, sufs), parts...)
			return m.args(head, cands)
		})
		if moved, ok := errors.AsType[*chainMoved](err); ok {
			if moves++; moves > maxChainMoves {
				return nil, fmt.Errorf("%w: %d times", store.ErrChainMoved, maxChainMoves)
			}
			if len(moved.sufs) != len(sufs) {
				return nil, corrupt("finish", errReply)
			}
			tip, sufs = moved.tip, moved.sufs
			s.tips.set(id, tip)
			if sealed, err = sealOn(f.Seal, tokensOf(sufs, len(f.Refs)), tip); err != nil {
				return nil, err
			}
			continue
		}
		if err == nil && sealed != nil {
			s.tips.set(id, sealed.Tip)
		}
		if err != nil || changed == nil {
			return toks, err
		}
		if attempt == maxSwaps {
			return nil, fmt.Errorf("store: redis finish: %w: label changed %d times in a row", store.ErrStoreUnavailable, maxSwaps)
		}
		if base, err = decodeLabel(*changed); err != nil {
			return nil, corrupt("finish", err)
		}
		cur = []byte(*changed)
	}
}

// decodeLabel reads a stored model-context label; "" is the empty one.
func decodeLabel(rec string) (ifc.Confidentiality, error) {
	if rec == "" {
		return nil, nil
	}
	return storecodec.DecodeConf([]byte(rec))
}

// Handles returns the run's referents in minting order, or ErrRunNotFound
// or ErrStoreUnavailable. It reads the table a page at a time
// (scriptHandles), so that no one script returns more than about
// handlesPageBytes however large the table: Redis serves other runs
// between pages. A table only grows, in order, so the pages read one
// after another are the table as it stood when the last was read, less
// what was minted meanwhile after it; a run deleted (or recreated under
// the id) between pages answers ErrRunNotFound.
func (s *Store) Handles(ctx context.Context, id string) ([]store.Referent, error) {
	k := s.keys(id)
	var out []store.Referent
	var tok string
	for {
		v, err := s.eval(ctx, false, scriptHandles, []string{k.run, k.handles, k.order},
			s.nowUS(), len(out), handlesPage, handlesPageBytes)
		if err != nil {
			return nil, fail(ctx, "handles", err)
		}
		if n, ok := status(v); ok && n == -1 {
			return nil, store.ErrRunNotFound
		}
		a, ok := asSlice(v)
		if !ok || len(a) != 4 {
			return nil, corrupt("handles", errReply)
		}
		t, _ := a[0].(string)
		total, _ := status(a[1])
		toks, ok1 := asSlice(a[2])
		recs, ok2 := asSlice(a[3])
		if !ok1 || !ok2 || len(toks) != len(recs) {
			return nil, corrupt("handles", errReply)
		}
		if out != nil && t != tok {
			return nil, store.ErrRunNotFound // another run under the id
		}
		tok = t
		if out == nil {
			out = make([]store.Referent, 0, min(total, handlesPage))
		}
		for i := range toks {
			suf, _ := toks[i].(string)
			rec, _ := recs[i].(string)
			r, err := storecodec.DecodeReferent([]byte(rec), store.ValueTokenPrefix+suf)
			if err != nil {
				return nil, corrupt("handles", err)
			}
			out = append(out, r)
		}
		if len(toks) == 0 || int64(len(out)) >= total {
			return out, nil
		}
	}
}

// handlesPage and handlesPageBytes bound one page of Handles: at most
// handlesPage referents, and no more referents once the page's records
// reach handlesPageBytes (a page holds at least one, so a referent larger
// than the bound is read alone).
const (
	handlesPage      = 256
	handlesPageBytes = 4 << 20
)

// Holds reports which of tokens the run holds, and whether it has its
// result, in one script that reads only those tokens' entries, or
// ErrRunNotFound, ErrTooManyTokens (more than store.MaxHolds tokens,
// nothing sent) or ErrStoreUnavailable.
func (s *Store) Holds(ctx context.Context, id string, tokens []string) ([]bool, bool, error) {
	if len(tokens) > store.MaxHolds {
		return nil, false, store.ErrTooManyTokens
	}
	k := s.keys(id)
	args := make([]any, 1, 1+len(tokens))
	args[0] = s.nowUS()
	for _, t := range tokens {
		suf := ""
		if key, ok := store.TokenKey(t); ok {
			suf = string(key[:])
		}
		args = append(args, suf)
	}
	v, err := s.eval(ctx, false, scriptHolds, []string{k.run, k.handles, k.result}, args...)
	if err != nil {
		return nil, false, fail(ctx, "holds", err)
	}
	if n, ok := status(v); ok && n == -1 {
		return nil, false, store.ErrRunNotFound
	}
	a, ok := asSlice(v)
	if !ok || len(a) != 1+len(tokens) {
		return nil, false, corrupt("holds", errReply)
	}
	held := make([]bool, len(tokens))
	for i := range tokens {
		n, _ := status(a[1+i])
		held[i] = n == 1
	}
	has, _ := status(a[0])
	return held, has == 1, nil
}

// Handle returns the referent with the token and true, false if the run
// holds no such token, or ErrRunNotFound or ErrStoreUnavailable.
func (s *Store) Handle(ctx context.Context, id, token string) (store.Referent, bool, error) {
	suf := ""
	if key, ok := store.TokenKey(token); ok {
		suf = string(key[:])
	}
	k := s.keys(id)
	v, err := s.eval(ctx, false, scriptHandle, []string{k.run, k.handles}, s.nowUS(), suf)
	if err != nil {
		return store.Referent{}, false, fail(ctx, "handle", err)
	}
	if n, ok := status(v); ok {
		switch n {
		case -1:
			return store.Referent{}, false, store.ErrRunNotFound
		case 0:
			return store.Referent{}, false, nil
		}
		return store.Referent{}, false, corrupt("handle", errReply)
	}
	a, ok := asSlice(v)
	if !ok || len(a) != 1 {
		return store.Referent{}, false, corrupt("handle", errReply)
	}
	rec, _ := a[0].(string)
	r, err := storecodec.DecodeReferent([]byte(rec), token)
	if err != nil {
		return store.Referent{}, false, corrupt("handle", err)
	}
	return r, true, nil
}

// ---- result ----

// PutResult stores the run's result. It returns ErrRunNotFound,
// ErrResultExists if one is stored, or ErrStoreUnavailable.
func (s *Store) PutResult(ctx context.Context, id string, res store.Result) error {
	k := s.keys(id)
	rec := storecodec.EncodeResult(res)
	tip := s.tips.get(id)
	sealed, err := sealOn(res.Seal, nil, tip)
	if err != nil {
		return err
	}
	var v any
	for moves := 0; ; moves++ {
		v, err = s.eval(ctx, true, scriptPutResult, []string{k.run, k.result, k.chain}, append([]any{s.nowUS(), rec}, chainArgs(sealed, tip)...)...)
		if err != nil {
			return fail(ctx, "put result", err)
		}
		a, ok := asSlice(v)
		if !ok {
			break
		}
		moved, err := readMoved(a)
		if err != nil {
			return corrupt("put result", err)
		}
		if moves == maxChainMoves {
			return fmt.Errorf("%w: %d times", store.ErrChainMoved, maxChainMoves)
		}
		tip = moved.tip
		s.tips.set(id, tip)
		if sealed, err = sealOn(res.Seal, nil, tip); err != nil {
			return err
		}
	}
	switch n, _ := status(v); n {
	case 0:
		if sealed != nil {
			s.tips.set(id, sealed.Tip)
		}
		return nil
	case 1:
		return store.ErrResultExists
	case -1:
		return store.ErrRunNotFound
	}
	return corrupt("put result", errReply)
}

// Result returns the run's result, or ErrRunNotFound, ErrNoResult or
// ErrStoreUnavailable.
func (s *Store) Result(ctx context.Context, id string) (store.Result, error) {
	k := s.keys(id)
	v, err := s.eval(ctx, false, scriptResult, []string{k.run, k.result}, s.nowUS())
	if err != nil {
		return store.Result{}, fail(ctx, "result", err)
	}
	if n, ok := status(v); ok {
		switch n {
		case -1:
			return store.Result{}, store.ErrRunNotFound
		case 0:
			return store.Result{}, store.ErrNoResult
		}
		return store.Result{}, corrupt("result", errReply)
	}
	a, ok := asSlice(v)
	if !ok || len(a) != 1 {
		return store.Result{}, corrupt("result", errReply)
	}
	rec, _ := a[0].(string)
	res, err := storecodec.DecodeResult([]byte(rec))
	if err != nil {
		return store.Result{}, corrupt("result", err)
	}
	return res, nil
}

// Ping reports whether Redis answers; any failure, the context's included,
// wraps ErrStoreUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("store: redis ping: %w: %w", store.ErrStoreUnavailable, err)
	}
	return nil
}
