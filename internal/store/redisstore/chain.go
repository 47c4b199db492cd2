package redisstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	"github.com/loom-gateway/gateway/internal/store"
)

// The run's chain (store.Seal) in Redis. Redis's Lua has no SHA-256, so a
// record cannot be hashed inside the script that writes it. The decision:
// Go seals the record (computes it and its hash) on the tip it expects and
// the tokens it expects the step to mint, and the script that ends the
// step (scriptFinish, scriptPutResult) compares both with what Redis holds
// before it writes anything; when either moved it writes nothing and
// answers the chain's length and tip and the tokens it would mint, and Go
// seals again on those and sends the step again, at most maxChainMoves
// times. A record is thus written only on the tip it names, in the same
// script as the call record, the handles and the label: replicas sharing
// one Redis make one chain with no gap and no fork. The run hash holds the
// tip (fields cs, the length, and ct, the hex hash of the last record);
// the chain:{runId} list holds the records.
//
// The tokens a step mints are, but for a token collision (about one in 24
// million per held token), each referent's first candidate, which Go
// computes, so the first guess is right; the tip is guessed from what this
// store last saw of the run (tips), so a run served by one replica costs
// no more round trips than without a chain, and a run whose calls
// alternate between replicas about one more per call that follows
// another replica's.

// luaChain is prepended to the scripts that extend a chain.
// chainMoved(run, at, sufs, want) reads the chain's four arguments from
// ARGV[at]: the length the record was sealed on ("" = no chain: nothing
// checked, nothing written), the tip's hex hash ("" for an empty chain),
// the record, the new tip's hex hash; it returns nil when the chain stands
// at the length and tip and sufs (the token suffixes the step mints) is
// want, else {5, length, tip, sufs}. chainExtend(run, chain, at) appends
// the record and sets the tip.
const luaChain = `
local function chainMoved(run, at, sufs, want)
  local seq = ARGV[at]
  if seq == '' then return nil end
  local g = redis.call('HMGET', run, 'cs', 'ct')
  local cs, ct = g[1] or '0', g[2] or ''
  if cs ~= seq or ct ~= ARGV[at + 1] or sufs ~= want then
    return {5, cs, ct, sufs}
  end
  return nil
end
local function chainExtend(run, chain, at)
  if ARGV[at] == '' then return end
  if redis.call('RPUSH', chain, ARGV[at + 2]) == 1 then expireAt(run, chain) end
  redis.call('HSET', run, 'cs', string.format('%d', tonumber(ARGV[at]) + 1), 'ct', ARGV[at + 3])
end
`

// maxChainMoves bounds the attempts of one step whose chain keeps moving:
// each failed attempt means another record was written on the run
// meanwhile.
const maxChainMoves = 1000

// chainMoved is a script's {5, length, tip, sufs}: nothing written.
type chainMoved struct {
	tip  store.Tip
	sufs string
}

func (c *chainMoved) Error() string { return "store: redis: the run's chain moved" }

// readMoved reads a {5, ...} reply.
func readMoved(a []any) (*chainMoved, error) {
	if len(a) != 4 {
		return nil, errReply
	}
	cs, _ := a[1].(string)
	ct, _ := a[2].(string)
	sufs, _ := a[3].(string)
	n, err := strconv.ParseInt(cs, 10, 64)
	if err != nil {
		return nil, err
	}
	m := &chainMoved{tip: store.Tip{Seq: n}, sufs: sufs}
	if ct != "" {
		if b, err := hex.DecodeString(ct); err != nil || len(b) != len(m.tip.Hash) {
			return nil, fmt.Errorf("chain tip %q", ct)
		}
		hex.Decode(m.tip.Hash[:], []byte(ct))
	}
	return m, nil
}

// chainArgs are the four chain arguments of a sealed record on tip; none
// sealed: four empty ones.
func chainArgs(s *store.Sealed, tip store.Tip) []any {
	if s == nil {
		return []any{"", "", "", ""}
	}
	cur := ""
	if tip.Seq > 0 {
		cur = hex.EncodeToString(tip.Hash[:])
	}
	return []any{strconv.FormatInt(tip.Seq, 10), cur, s.Record, hex.EncodeToString(s.Tip.Hash[:])}
}

// tips is what a store last saw of its runs' chains: the guess it seals
// a record on. It is a guess only; the script checks it.
type tips struct {
	mu sync.Mutex
	m  map[string]store.Tip
}

// maxTips bounds the runs tips remembers; past it, it forgets them all
// (a forgotten run costs one round trip on its next record).
const maxTips = 1 << 16

func (t *tips) get(id string) store.Tip {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *tips) set(id string, tip store.Tip) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTips {
		t.m = make(map[string]store.Tip)
	}
	t.m[id] = tip
}

func (t *tips) drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

// sealOn seals a record with seal on tip and tokens (nil seal: none).
func sealOn(seal store.Seal, tokens []string, tip store.Tip) (*store.Sealed, error) {
	if seal == nil {
		return nil, nil
	}
	s, err := seal(tokens, tip)
	if err != nil {
		return nil, err
	}
	if err := store.CheckSealed(s, tip); err != nil {
		return nil, err
	}
	return &s, nil
}

// tokensOf is the tokens of suffixes one after another.
func tokensOf(sufs string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = store.ValueTokenPrefix + sufs[i*store.TokenWidth:(i+1)*store.TokenWidth]
	}
	return out
}

// scriptChain reads one page of a run's chain. KEYS: run, chain. ARGV:
// now_us, start, stop. Returns {tok, records}.
var scriptChain = readScript(`
if not live(KEYS[1], ARGV[1]) then return -1 end
return {redis.call('HGET', KEYS[1], 'tok'), redis.call('LRANGE', KEYS[2], ARGV[2], ARGV[3])}
`)

// chainPage is how many records one scriptChain reads.
const chainPage = 1000

var _ store.Chains = (*Store)(nil)

// Chain returns the run's chain records in order, a page a script; a run
// deleted or recreated between pages answers ErrRunNotFound.
func (s *Store) Chain(ctx context.Context, id string) ([][]byte, error) {
	k := s.keys(id)
	var out [][]byte
	tok := ""
	// Paged as Handles reads the handle table (the same reply shape, other
	// members), so that no one script returns a whole chain.
	for {
		start := len(out)
		v, err := s.eval(ctx, false, scriptChain, []string{k.run, k.chain}, s.nowUS(), start, start+chainPage-1)
		if err != nil {
			return nil, fail(ctx, "chain", err)
		}
		if n, ok := status(v); ok && n == -1 {
			return nil, store.ErrRunNotFound
		}
		a, ok := asSlice(v)
		if !ok || len(a) != 2 {
			return nil, corrupt("chain", errReply)
		}
		t, _ := a[0].(string)
		recs, ok := asSlice(a[1])
		if !ok {
			return nil, corrupt("chain", errReply)
		}
		if start == 0 {
			tok = t
		} else if t != tok {
			return nil, store.ErrRunNotFound
		}
		for _, r := range recs {
			b, _ := r.(string)
			out = append(out, []byte(b))
		}
		if len(recs) < chainPage {
			return out, nil
		}
	}
}

// firstSuffixes is the token suffixes the referents get when each gets
// its first candidate, one after another: what a step mints but for a
// collision.
func (m *mintArgs) firstSuffixes() string {
	b := make([]byte, 0, len(m.refs)*store.TokenWidth)
	for i := range m.refs {
		suf := store.SuffixOf(&m.digests[i])
		b = append(b, suf[:]...)
	}
	return string(b)
}
