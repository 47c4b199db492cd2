// Package memstore is the run store of one gateway process: store.Store
// over maps in memory, lost when the process ends.
package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
	"github.com/loom-gateway/gateway/internal/store/storecodec"
)

var _ store.Store = (*Store)(nil)

// Options configures a Store. The zero value is usable.
type Options struct {
	// MaxRuns caps the number of live runs; <= 0 means no cap.
	MaxRuns int
	// MaxLabelClauses caps the clauses of a run's model-context label
	// (Observe); <= 0 means no cap.
	MaxLabelClauses int
	// Now is the clock runs expire by; nil means time.Now. It is called
	// outside the store's lock.
	Now func() time.Time
}

// Store is the in-process store.Store: every run lives in one map under one
// mutex, and every method copies values in and out, so nothing a caller
// holds aliases the store. An expired run is deleted by the first method
// that meets it, or by Sweep. The context arguments are ignored: no method
// blocks on anything but the lock. Store is safe for concurrent use.
type Store struct {
	now     func() time.Time
	maxRuns int
	// maxClauses is Options.MaxLabelClauses.
	maxClauses int

	// seed hashes referents' identities for the handle tables.
	seed maphash.Seed

	mu      sync.Mutex
	runs    map[string]*memRun
	byToken map[store.TokenHash]*memRun
	tombs   tombstones // tombstone.go
}

// memRun is a run and its state. Counters are kept in run.
type memRun struct {
	run store.Run
	// calls is the call log, each record in its binary form
	// (storecodec.EncodeCall): bytes without pointers, which the
	// collector does not walk however long the log grows, at about a
	// third of the size of the records they hold.
	calls   [][]byte
	handles []store.Referent
	// ids maps the hash (Store.seed) of a referent's Identity to its
	// index in handles, more to the indices of further referents whose
	// identities share that hash (almost never any); tokens maps a token
	// suffix to the same. A referent is found by its hash and then its
	// identity compared, so a call that shows a run what it already holds
	// costs no SHA-256.
	ids    map[uint64]int32
	more   map[uint64][]int32
	tokens map[[store.TokenWidth]byte]int32
	result *store.Result
	// bucket is the run's rate bucket (Begin).
	bucket store.Bucket
	// flight holds the run's in-flight marks: output number -> expiry.
	flight map[int64]time.Time
	// chain is the run's chain (store.Seal).
	chain chain
}

// New returns an empty Store.
func New(opts Options) *Store {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{
		now:        now,
		maxRuns:    opts.MaxRuns,
		maxClauses: opts.MaxLabelClauses,
		seed:       maphash.MakeSeed(),
		runs:       make(map[string]*memRun),
		byToken:    make(map[store.TokenHash]*memRun),
	}
}

// expired reports whether the run is gone at now. A zero ExpiresAt never
// expires.
func expired(r *store.Run, now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !r.ExpiresAt.After(now)
}

// live returns the live run with the id, deleting it if it has expired.
// m.mu must be held.
func (m *Store) live(id string, now time.Time) (*memRun, error) {
	r := m.runs[id]
	if r == nil {
		return nil, store.ErrRunNotFound
	}
	if expired(&r.run, now) {
		m.remove(r)
		return nil, store.ErrRunNotFound
	}
	return r, nil
}

// remove deletes a run from both indexes. m.mu must be held.
func (m *Store) remove(r *memRun) {
	delete(m.runs, r.run.ID)
	if m.byToken[r.run.TokenHash] == r {
		delete(m.byToken, r.run.TokenHash)
	}
}

// sweep removes every expired run and returns how many. m.mu must be held.
func (m *Store) sweep(now time.Time) int {
	n := 0
	for _, r := range m.runs {
		if expired(&r.run, now) {
			m.remove(r)
			n++
		}
	}
	return n
}

// Sweep removes every expired run and returns how many it removed. Expired
// runs are invisible without it; Sweep only gives their memory back.
func (m *Store) Sweep() int {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sweep(now)
}

// CreateRun stores a copy of r with its counters zeroed. It returns
// ErrRunExists if a live run has the id or the token hash, and ErrRunLimit
// if MaxRuns live runs are stored.
func (m *Store) CreateRun(_ context.Context, r store.Run) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, old := range []*memRun{m.runs[r.ID], m.byToken[r.TokenHash]} {
		if old == nil {
			continue
		}
		if !expired(&old.run, now) {
			return store.ErrRunExists
		}
		m.remove(old)
	}
	if m.maxRuns > 0 && len(m.runs) >= m.maxRuns {
		if m.sweep(now); len(m.runs) >= m.maxRuns {
			return store.ErrRunLimit
		}
	}
	nr := &memRun{run: cloneRun(r)}
	nr.run.Seq, nr.run.Calls, nr.run.Handles, nr.run.HasResult = 0, 0, 0, false
	nr.run.HandleBytes = 0
	m.runs[r.ID] = nr
	m.byToken[r.TokenHash] = nr
	return nil
}

// Run returns a copy of the run, or ErrRunNotFound.
func (m *Store) Run(_ context.Context, id string) (store.Run, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return store.Run{}, err
	}
	return cloneRun(r.run), nil
}

// RunByToken returns a copy of the live run whose token hashes to h, or
// ErrRunNotFound.
func (m *Store) RunByToken(_ context.Context, h store.TokenHash) (store.Run, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byToken[h]
	if r == nil {
		return store.Run{}, store.ErrRunNotFound
	}
	if expired(&r.run, now) {
		m.remove(r)
		return store.Run{}, store.ErrRunNotFound
	}
	return cloneRun(r.run), nil
}

// Runs returns copies of the live runs, oldest CreatedAt first, ties by
// ID.
func (m *Store) Runs(_ context.Context) ([]store.Run, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Run, 0, len(m.runs))
	for _, r := range m.runs {
		if expired(&r.run, now) {
			m.remove(r)
			continue
		}
		out = append(out, cloneRun(r.run))
	}
	slices.SortFunc(out, store.CompareRuns)
	return out, nil
}

// CountRuns returns the number of live runs, copying none.
func (m *Store) CountRuns(context.Context) (int, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	return len(m.runs), nil
}

// RunsPage returns copies of at most limit live runs after the key after,
// in Runs' order, and whether more follow. Under the lock it sorts the
// keys of the runs after the page's start and copies only the page.
func (m *Store) RunsPage(_ context.Context, after store.RunKey, limit int) ([]store.Run, bool, error) {
	limit = max(limit, 1)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var rest []*memRun
	for _, r := range m.runs {
		if expired(&r.run, now) {
			m.remove(r)
			continue
		}
		if store.KeyOf(r.run).After(after) {
			rest = append(rest, r)
		}
	}
	slices.SortFunc(rest, func(a, b *memRun) int { return store.CompareRuns(a.run, b.run) })
	more := len(rest) > limit
	rest = rest[:min(limit, len(rest))]
	out := make([]store.Run, len(rest))
	for i, r := range rest {
		out[i] = cloneRun(r.run)
	}
	return out, more, nil
}

// DeleteRun removes the run with its call log, handles and result, or
// returns ErrRunNotFound.
func (m *Store) DeleteRun(_ context.Context, id string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return err
	}
	m.remove(r)
	return nil
}

// NextOutput increments the run's Seq and returns it, or ErrRunNotFound.
func (m *Store) NextOutput(_ context.Context, id string) (int64, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return 0, err
	}
	r.run.Seq++
	return r.run.Seq, nil
}

// Begin checks the token, takes a call from the run's rate bucket, the
// next output number and, under bg.MaxInFlight, an in-flight mark (the
// expired ones dropped first) under one lock, and returns a copy of the
// run, its Seq the number taken and Marked whether the mark was;
// ErrRunNotFound, ErrOutputLimit or a *store.RateLimitError with nothing
// taken.
func (m *Store) Begin(_ context.Context, id string, bg store.Begin) (store.Run, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return store.Run{}, err
	}
	if bg.Token != nil && subtle.ConstantTimeCompare(r.run.TokenHash[:], bg.Token[:]) != 1 {
		return store.Run{}, store.ErrRunNotFound
	}
	if !bg.NoOutput && bg.MaxCalls > 0 && r.run.Seq >= bg.MaxCalls {
		return store.Run{}, store.ErrCallLimit
	}
	b, wait, ok := bg.Rate.Take(r.bucket, now.UnixMicro())
	if !ok {
		return store.Run{}, &store.RateLimitError{RetryAfter: wait}
	}
	r.bucket = b
	if bg.NoOutput {
		return cloneRun(r.run), nil
	}
	r.run.Seq++
	marked := bg.MaxInFlight > 0 && r.mark(r.run.Seq, bg.MaxInFlight, now, now.Add(bg.Lease))
	out := cloneRun(r.run)
	out.Marked = marked
	return out, nil
}

// mark marks output seq in flight until until if the run holds fewer
// than max marks, the ones expired at now dropped first when it holds
// max. m.mu must be held.
func (r *memRun) mark(seq int64, max int, now, until time.Time) bool {
	if len(r.flight) >= max {
		for s, exp := range r.flight {
			if !exp.After(now) {
				delete(r.flight, s)
			}
		}
	}
	if len(r.flight) >= max {
		return false
	}
	if r.flight == nil {
		r.flight = map[int64]time.Time{}
	}
	r.flight[seq] = until
	return true
}

// Release drops the run's in-flight mark of output number mark, if the
// run lives and holds it.
func (m *Store) Release(_ context.Context, id string, mark int64) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, err := m.live(id, now); err == nil {
		delete(r.flight, mark)
	}
	return nil
}

// Observe replaces the run's ModelContext by
// ifc.JoinModelContext(ModelContext, conf) and returns a copy of it, or
// ErrRunNotFound.
func (m *Store) Observe(_ context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return nil, err
	}
	next := ifc.JoinModelContext(r.run.ModelContext, conf)
	if m.maxClauses > 0 && len(next) > m.maxClauses {
		return nil, store.ErrLabelLimit
	}
	r.run.ModelContext = store.CloneConfidentiality(next)
	return store.CloneConfidentiality(r.run.ModelContext), nil
}

// AppendCall appends a copy of c to the run's call log, or returns
// ErrRunNotFound.
func (m *Store) AppendCall(_ context.Context, id string, c store.Call) error {
	rec, _ := record(c, false) // before the lock: the copy may be large
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return err
	}
	r.calls = append(r.calls, rec)
	r.run.Calls = len(r.calls)
	return nil
}

// CallsPage returns a copy of the records of the run's call log after its
// first after, at most limit of them (limit <= 0: all the rest), and the
// log's length, or ErrRunNotFound. Under the lock it only takes the log's
// slice header, capped at its length: a stored record is never written
// again (AppendCall stores a copy and only appends past the end), so the
// page is decoded after the lock is released, and a long log does not
// hold up the store.
func (m *Store) CallsPage(_ context.Context, id string, after, limit int) ([]store.Call, int, error) {
	now := m.now()
	m.mu.Lock()
	r, err := m.live(id, now)
	var log [][]byte
	if err == nil {
		log = r.calls[:len(r.calls):len(r.calls)]
	}
	m.mu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	page := log[min(max(after, 0), len(log)):]
	if limit > 0 && limit < len(page) {
		page = page[:limit]
	}
	out := make([]store.Call, len(page))
	for i, rec := range page {
		// A copy of the record, as the decoded call's byte fields alias it.
		c, err := storecodec.DecodeCall(bytes.Clone(rec))
		if err != nil { // only ever a record of this process's own making
			return nil, 0, err
		}
		out[i] = c
	}
	return out, len(log), nil
}

// Mint registers refs in the run's handle table and returns their tokens in
// order (see Store.Mint). Identities are compared whole (found by a hash
// of Identity). It returns ErrRunNotFound, or ErrHandleLimit with nothing
// registered.
func (m *Store) Mint(_ context.Context, id string, refs []store.Referent, lim store.MintLimits) ([]string, error) {
	keys := m.mintKeys(refs)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, p, err := m.plan(id, now, refs, &keys, lim)
	if err != nil {
		return nil, err
	}
	return r.mint(p), nil
}

// plan finds the live run id and plans the minting of refs into its
// table (planMint). The SHA-256 digests of the referents new to the table
// are computed outside the lock: when the plan needs digests that keys
// lacks, plan gives the lock back, computes them and plans again (the
// table may have changed meanwhile), so a call whose referents are all
// held computes none. It returns the run (nil when it is not live) with
// planMint's error. m.mu must be held; it is held on return.
func (m *Store) plan(id string, now time.Time, refs []store.Referent, keys *mintKeys, lim store.MintLimits) (*memRun, mintPlan, error) {
	for {
		r, err := m.live(id, now)
		if err != nil {
			return nil, mintPlan{}, err
		}
		p, err := r.planMint(id, refs, keys, lim)
		if err != errNeedDigests {
			return r, p, err
		}
		m.mu.Unlock()
		keys.digest(id, refs, p.fresh)
		m.mu.Lock()
	}
}

// Finish mints f.Refs, joins f.Observed into the run's label, appends a
// copy of f.Call with its admitted entries' handles and drops the
// in-flight mark f.Mark, under one lock, and returns the tokens;
// ErrRunNotFound, ErrLabelLimit or ErrHandleLimit with nothing written.
func (m *Store) Finish(_ context.Context, id string, f store.Finish) ([]string, error) {
	// The record before the lock (it may be large), with room for the
	// tokens of its admitted entries.
	rec, slots := record(f.Call, true)
	if len(slots) != len(f.Refs) {
		return nil, store.ErrFinishShape
	}
	keys := m.mintKeys(f.Refs)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, p, err := m.plan(id, now, f.Refs, &keys, f.Limits)
	if r == nil {
		return nil, err
	}
	var label ifc.Confidentiality
	if f.Observed != nil {
		label = ifc.JoinModelContext(r.run.ModelContext, f.Observed)
		if m.maxClauses > 0 && len(label) > m.maxClauses {
			return nil, store.ErrLabelLimit
		}
	}
	if err != nil {
		return nil, err
	}
	sealed, err := r.seal(f.Seal, func() []string { return r.planned(p) })
	if err != nil {
		return nil, err
	}
	tokens := r.mint(p)
	r.extend(sealed)
	if f.Observed != nil && !sameConfidentiality(label, r.run.ModelContext) {
		r.run.ModelContext = store.CloneConfidentiality(label)
	}
	for i, t := range tokens {
		copy(rec[slots[i]:slots[i]+store.TokenWidth], t[len(t)-store.TokenWidth:])
	}
	r.calls = append(r.calls, rec)
	r.run.Calls = len(r.calls)
	delete(r.flight, f.Mark)
	return tokens, nil
}

// record is c's record as the call log keeps it (storecodec), with room
// for the tokens of its admitted entries when slots is set, and their
// offsets. It is written in a pooled buffer and kept in one of exactly
// its size.
func record(c store.Call, slots bool) ([]byte, []int) {
	buf := recordBufs.Get().(*[]byte)
	var enc []byte
	var at []int
	if slots {
		enc, at = storecodec.AppendCallSlots((*buf)[:0], c)
	} else {
		enc = storecodec.AppendCall((*buf)[:0], c)
	}
	rec := bytes.Clone(enc)
	if cap(enc) <= maxPooledRecord {
		*buf = enc
		recordBufs.Put(buf)
	}
	return rec, at
}

// recordBufs are the buffers record writes in; one grown past
// maxPooledRecord (a call of unusually many or long labels) is left to
// the collector.
var recordBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledRecord = 64 << 10

// mintKeys is what a mint knows of its referents before it takes the
// lock: the hash of each one's Identity and, once plan has asked for them,
// the SHA-256 of run ID "\x00" Identity (the first-attempt token
// preimage) of those new to the table.
type mintKeys struct {
	hashes  []uint64
	digests [][sha256.Size]byte
	have    []bool // digests[i] is computed
}

// mintKeys hashes refs' identities (outside the lock).
func (m *Store) mintKeys(refs []store.Referent) mintKeys {
	k := mintKeys{hashes: make([]uint64, len(refs))}
	var buf []byte
	for i := range refs {
		buf = store.AppendIdentity(buf[:0], refs[i])
		k.hashes[i] = maphash.Bytes(m.seed, buf)
	}
	return k
}

// digest computes the SHA-256 of run ID "\x00" Identity of the referents
// of refs at indices (outside the lock).
func (k *mintKeys) digest(id string, refs []store.Referent, indices []int) {
	if k.digests == nil {
		k.digests = make([][sha256.Size]byte, len(k.hashes))
		k.have = make([]bool, len(k.hashes))
	}
	var buf []byte
	for _, i := range indices {
		if k.have[i] {
			continue
		}
		buf = store.AppendIdentity(append(append(buf[:0], id...), 0), refs[i])
		k.digests[i] = sha256.Sum256(buf)
		k.have[i] = true
	}
}

// errNeedDigests is planMint's word that it needs the digests of
// mintPlan.fresh first.
var errNeedDigests = errors.New("memstore: digests needed")

// mintPlan is what a Mint will write, resolved without touching the
// table, so that a refusal leaves it as it was.
type mintPlan struct {
	refs []store.Referent
	keys *mintKeys
	// idx is each ref's index in the table (>= 0) or -1 - its position in
	// fresh.
	idx        []int32
	fresh      []int // indices into refs of new identities, first occurrence only
	freshToken [][store.TokenWidth]byte
}

// find returns the index in the table of the referent whose Identity is
// ref's (hash h), and whether there is one. m.mu must be held.
func (r *memRun) find(h uint64, ref *store.Referent, sc *scratch) (int32, bool) {
	j, ok := r.ids[h]
	if !ok {
		return 0, false
	}
	for k := -1; ; k++ {
		if k >= 0 {
			if k >= len(r.more[h]) {
				return 0, false
			}
			j = r.more[h][k]
		}
		if sc.sameIdentity(&r.handles[j], ref) {
			return j, true
		}
	}
}

// scratch is the room sameIdentity encodes identities in.
type scratch struct{ a, b []byte }

// sameIdentity reports whether a and b have the same Identity: the same
// fields (Token aside) have; other fields may too (it is a text), so
// they are then compared as that text.
func (sc *scratch) sameIdentity(a, b *store.Referent) bool {
	if sameReferent(a, b) {
		return true
	}
	sc.a = store.AppendIdentity(sc.a[:0], *a)
	sc.b = store.AppendIdentity(sc.b[:0], *b)
	return bytes.Equal(sc.a, sc.b)
}

// sameConfidentiality reports whether a and b are the same clauses in the
// same order (a run's label most often is once its first calls are made).
func sameConfidentiality(a, b ifc.Confidentiality) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, func(x, y ifc.Clause) bool { return bytes.Equal(x, y) })
}

// sameReferent reports whether a and b have the same fields, Token aside.
func sameReferent(a, b *store.Referent) bool {
	return a.Kind == b.Kind && a.Source == b.Source && a.LabelSource == b.LabelSource &&
		bytes.Equal(a.Value, b.Value) &&
		slices.EqualFunc(a.Label.Confidentiality, b.Label.Confidentiality, func(x, y ifc.Clause) bool { return bytes.Equal(x, y) }) &&
		slices.EqualFunc(a.Label.Integrity, b.Label.Integrity, func(x, y ifc.Atom) bool { return bytes.Equal(x, y) })
}

// freshOf returns the position in p.fresh of a referent of the same
// identity as refs[i], found by its hash (then in turn, when one of another
// identity has the hash), and whether there is one.
func (p *mintPlan) freshOf(freshKeys map[uint64]int, i int, sc *scratch) (int, bool) {
	h := p.keys.hashes[i]
	f, ok := freshKeys[h]
	if !ok {
		return 0, false
	}
	if sc.sameIdentity(&p.refs[p.fresh[f]], &p.refs[i]) {
		return f, true
	}
	for f, k := range p.fresh {
		if p.keys.hashes[k] == h && sc.sameIdentity(&p.refs[k], &p.refs[i]) {
			return f, true
		}
	}
	return 0, false
}

// planMint resolves every ref to a held referent or a new token, and
// refuses (ErrHandleLimit) what would pass lim. It returns errNeedDigests,
// with the plan's fresh set, when keys lacks the digest of a fresh
// referent. m.mu must be held.
func (r *memRun) planMint(id string, refs []store.Referent, keys *mintKeys, lim store.MintLimits) (mintPlan, error) {
	p := mintPlan{refs: refs, keys: keys, idx: make([]int32, len(refs))}
	var (
		freshKeys map[uint64]int                      // identity hash -> position in fresh of the first with it
		freshToks map[[store.TokenWidth]byte]struct{} // tokens taken by fresh
		sc        scratch
		missing   bool
	)
	for i := range refs {
		if j, ok := r.find(keys.hashes[i], &refs[i], &sc); ok {
			p.idx[i] = j
			continue
		}
		if f, ok := p.freshOf(freshKeys, i, &sc); ok {
			p.idx[i] = -1 - int32(f)
			continue
		}
		if freshKeys == nil {
			freshKeys = make(map[uint64]int)
			freshToks = make(map[[store.TokenWidth]byte]struct{})
		}
		p.idx[i] = -1 - int32(len(p.fresh))
		if _, ok := freshKeys[keys.hashes[i]]; !ok {
			freshKeys[keys.hashes[i]] = len(p.fresh)
		}
		p.fresh = append(p.fresh, i)
		if keys.have == nil || !keys.have[i] {
			missing = true
			continue
		}
		tok := store.SuffixOf(&keys.digests[i])
		var identity []byte
		for attempt := 1; ; attempt++ {
			_, held := r.tokens[tok]
			_, taken := freshToks[tok]
			if !held && !taken {
				break
			}
			if identity == nil {
				identity = store.Identity(refs[i])
			}
			tok = store.TokenSuffix(id, identity, attempt)
		}
		freshToks[tok] = struct{}{}
		p.freshToken = append(p.freshToken, tok)
	}
	if missing {
		return mintPlan{fresh: p.fresh}, errNeedDigests
	}
	if len(p.fresh) > 0 {
		if lim.Handles > 0 && len(r.handles)+len(p.fresh) > lim.Handles {
			return mintPlan{}, store.ErrHandleLimit
		}
		if lim.Bytes > 0 {
			held := r.run.HandleBytes
			for _, i := range p.fresh {
				// Stops at the first referent past the cap, so held
				// cannot overflow.
				if held += store.ReferentBytes(refs[i]); held > lim.Bytes {
					return mintPlan{}, store.ErrHandleLimit
				}
			}
		}
	}
	return p, nil
}

// mint writes a plan into the table and returns the refs' tokens in
// order. m.mu must be held.
func (r *memRun) mint(p mintPlan) []string {
	if len(p.fresh) > 0 && r.ids == nil {
		r.ids = make(map[uint64]int32, len(p.fresh))
		r.tokens = make(map[[store.TokenWidth]byte]int32, len(p.fresh))
	}
	base := int32(len(r.handles))
	for f, i := range p.fresh {
		ref := cloneReferent(p.refs[i])
		ref.Token = store.ValueTokenPrefix + string(p.freshToken[f][:])
		j := base + int32(f)
		r.handles = append(r.handles, ref)
		if h := p.keys.hashes[i]; r.hasHash(h) {
			if r.more == nil {
				r.more = make(map[uint64][]int32)
			}
			r.more[h] = append(r.more[h], j)
		} else {
			r.ids[h] = j
		}
		r.tokens[p.freshToken[f]] = j
		r.run.HandleBytes += store.ReferentBytes(ref)
	}
	r.run.Handles = len(r.handles)

	tokens := make([]string, len(p.refs))
	for i, j := range p.idx {
		if j < 0 {
			j = base + (-1 - j)
		}
		tokens[i] = r.handles[j].Token
	}
	return tokens
}

// hasHash reports whether a referent of the table has identity hash h.
func (r *memRun) hasHash(h uint64) bool {
	_, ok := r.ids[h]
	return ok
}

// Handles returns copies of the run's referents in minting order, or
// ErrRunNotFound.
//
// Under the store's lock it copies only the table's entries, which share
// their bytes with the table; the copies of the bytes are made after the
// lock is given back (a minted referent is never written again, and a
// table only grows), so a large table holds up no other run.
func (m *Store) Handles(_ context.Context, id string) ([]store.Referent, error) {
	now := m.now()
	m.mu.Lock()
	r, err := m.live(id, now)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	out := slices.Clone(r.handles)
	m.mu.Unlock()
	for i, h := range out {
		out[i] = cloneReferent(h)
	}
	return out, nil
}

// Holds reports, for each token, whether the run holds it, and whether
// the run has its result: a map lookup per token under the lock, no
// referent copied. ErrTooManyTokens for more than store.MaxHolds tokens.
func (m *Store) Holds(_ context.Context, id string, tokens []string) ([]bool, bool, error) {
	if len(tokens) > store.MaxHolds {
		return nil, false, store.ErrTooManyTokens
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return nil, false, err
	}
	held := make([]bool, len(tokens))
	for i, t := range tokens {
		if k, ok := store.TokenKey(t); ok {
			_, held[i] = r.tokens[k]
		}
	}
	return held, r.result != nil, nil
}

// Handle returns a copy of the referent with the token and true, false if
// the run holds no such token, or ErrRunNotFound.
func (m *Store) Handle(_ context.Context, id, token string) (store.Referent, bool, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return store.Referent{}, false, err
	}
	k, ok := store.TokenKey(token)
	if !ok {
		return store.Referent{}, false, nil
	}
	j, ok := r.tokens[k]
	if !ok {
		return store.Referent{}, false, nil
	}
	return cloneReferent(r.handles[j]), true, nil
}

// PutResult stores a copy of res as the run's result. It returns
// ErrRunNotFound, or ErrResultExists if a result is stored.
func (m *Store) PutResult(_ context.Context, id string, res store.Result) error {
	res = cloneResult(res)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return err
	}
	if r.result != nil {
		return store.ErrResultExists
	}
	sealed, err := r.seal(res.Seal, nil)
	if err != nil {
		return err
	}
	res.Seal = nil
	r.extend(sealed)
	r.result = &res
	r.run.HasResult = true
	return nil
}

// Result returns a copy of the run's result. It returns ErrRunNotFound, or
// ErrNoResult if none is stored.
func (m *Store) Result(_ context.Context, id string) (store.Result, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.live(id, now)
	if err != nil {
		return store.Result{}, err
	}
	if r.result == nil {
		return store.Result{}, store.ErrNoResult
	}
	return cloneResult(*r.result), nil
}

// Ping returns nil: memory is always reachable.
func (m *Store) Ping(context.Context) error { return nil }

// Deep copies. Strings are immutable and shared; every slice is copied.

func cloneRun(r store.Run) store.Run {
	r.Ceiling = cloneCeiling(r.Ceiling)
	r.ModelContext = store.CloneConfidentiality(r.ModelContext)
	r.Tools = slices.Clone(r.Tools)
	return r
}

func cloneCeiling(c ifc.Ceiling) ifc.Ceiling {
	if !c.Defined() {
		return ifc.NoCeiling
	}
	return ifc.CeilingOf(store.CloneConfidentiality(c.Clauses()))
}

func cloneAtoms(as []ifc.Atom) []ifc.Atom {
	if as == nil {
		return nil
	}
	out := make([]ifc.Atom, len(as))
	for i, a := range as {
		out[i] = ifc.Atom(bytes.Clone(a))
	}
	return out
}

func cloneLabel(l ifc.Label) ifc.Label {
	return ifc.Label{Confidentiality: store.CloneConfidentiality(l.Confidentiality), Integrity: cloneAtoms(l.Integrity)}
}

func cloneValue(v jsontext.Value) jsontext.Value {
	return jsontext.Value(bytes.Clone(v))
}

// cloneReferent copies r's bytes (value, clauses, atoms) into one buffer,
// each piece capped so an append by a caller cannot reach the next.
func cloneReferent(r store.Referent) store.Referent {
	n := len(r.Value)
	for _, c := range r.Label.Confidentiality {
		n += len(c)
	}
	for _, a := range r.Label.Integrity {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	r.Value = take(r.Value)
	if c := r.Label.Confidentiality; c != nil {
		out := make(ifc.Confidentiality, len(c))
		for i, x := range c {
			out[i] = take(x)
		}
		r.Label.Confidentiality = out
	}
	if as := r.Label.Integrity; as != nil {
		out := make([]ifc.Atom, len(as))
		for i, a := range as {
			out[i] = take(a)
		}
		r.Label.Integrity = out
	}
	return r
}

func cloneResult(r store.Result) store.Result {
	r.Value = cloneValue(r.Value)
	if r.Documents != nil {
		out := make([]store.Document, len(r.Documents))
		for i, d := range r.Documents {
			d.Value = cloneValue(d.Value)
			d.Label = cloneLabel(d.Label)
			out[i] = d
		}
		r.Documents = out
	}
	r.Receipt = cloneLabel(r.Receipt)
	r.Label = cloneLabel(r.Label)
	return r
}
