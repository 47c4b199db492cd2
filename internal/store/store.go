// Package store owns the per-run state of the gateway: the run and its token
// hash, ceiling and model-context label, the output sequence, the call log,
// the handle table and the result, and the handle token grammar. Store is
// the whole storage contract; its implementations live apart, so what
// reads these types links no database client: memstore (the embedded
// default) and redisstore (shared by replicas). Every implementation passes
// storetest.Run.
package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
)

// Errors returned by Store implementations. Callers branch with errors.Is.
var (
	ErrRunNotFound      = errors.New("store: run not found")
	ErrRunExists        = errors.New("store: run exists")
	ErrRunLimit         = errors.New("store: run limit reached")
	ErrHandleLimit      = errors.New("store: handle limit reached")
	ErrLabelLimit       = errors.New("store: label limit reached")
	ErrResultExists     = errors.New("store: result exists")
	ErrStoreUnavailable = errors.New("store: unavailable")
	// ErrRateLimited is what a *RateLimitError is (errors.Is).
	ErrRateLimited = errors.New("store: rate limit reached")
	// ErrCallLimit is Begin's refusal of an output past Begin.MaxSeq.
	ErrCallLimit = errors.New("store: output limit reached")
	// ErrTooManyTokens is Holds' refusal of more than MaxHolds tokens.
	ErrTooManyTokens = errors.New("store: too many tokens asked about")
)

// MaxHolds bounds the tokens one Holds asks about, so that one store step
// of it stays small whatever a request names.
const MaxHolds = 1024

// Begin is what starts a tool output (Store.Begin).
type Begin struct {
	// Token, when not nil, is the hash the run's token must have: a run
	// stored with another answers ErrRunNotFound with nothing taken, so
	// the step that takes the output number also authenticates it.
	Token *TokenHash
	// Rate is the run's call rate, the caller's, read at each call.
	Rate Rate
	// MaxCalls caps the output numbers: a run that has taken MaxCalls of
	// them answers ErrOutputLimit with nothing taken. <= 0 is no cap.
	MaxCalls int64
	// MaxInFlight caps the run's outputs in flight: Begin gives the
	// output an in-flight mark when the run holds fewer than MaxInFlight
	// marks that have not expired, and otherwise numbers it without one
	// (Run.Marked false). <= 0 is no cap: no mark is taken. Every store
	// sharing a backend counts the same marks.
	MaxInFlight int
	// Lease is how long a mark holds unless Finish or Release gives it
	// back first: the longest an output may take, so that the marks of
	// a caller that died mid-output free themselves. A mark expires at
	// Begin's clock plus Lease; one of a Lease <= 0 is expired at once.
	Lease time.Duration
	// NoOutput makes Begin the admission of a request that is not an
	// output (a ping, a catalog read, a result write): it checks Token
	// and takes a call from the bucket of Rate, and nothing else: no
	// output number (the run's Seq is answered as it stands), no mark,
	// MaxSeq and MaxInFlight not read.
	NoOutput bool
}

// Rate is a run's call rate: a token bucket that holds at most Burst calls
// and refills at PerSecond calls a second, full when the run is created.
// A PerSecond of zero or less is no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// RateLimitError is Begin's refusal of an output past the run's Rate.
// RetryAfter is how long until the bucket holds a call again.
type RateLimitError struct{ RetryAfter time.Duration }

func (e *RateLimitError) Error() string { return ErrRateLimited.Error() }

// Is makes a RateLimitError match ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// TokenHash is the SHA-256 of a run token. Only the hash is ever stored.
type TokenHash [sha256.Size]byte

// HashToken returns the hash under which a run token is stored.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// Run is a run as stored. Counters (Calls, Handles, HandleBytes,
// HasResult, Seq) are maintained by the store and ignored on CreateRun.
type Run struct {
	ID        string
	TokenHash TokenHash
	CreatedAt time.Time
	// ExpiresAt is when the run is gone: at and after it every method
	// answers ErrRunNotFound. The zero time means never.
	ExpiresAt time.Time
	// Ceiling is the run's ceiling before the read-ceiling record: the
	// process-wide flag met with the manifest's maxConfidentiality.
	Ceiling ifc.Ceiling
	// ModelContext is the run's accumulated model-context confidentiality,
	// the query label of the next call.
	ModelContext ifc.Confidentiality
	// Tools is the set of tool ids the run may call; nil means every tool
	// the gateway offers.
	Tools []string

	Seq     int64 // outputs so far (the last n of an outputId)
	Calls   int
	Handles int
	// HandleBytes is the sum of ReferentBytes over the handle table.
	HandleBytes int64
	HasResult   bool
	// Marked is Begin's answer alone (false in every other read): the
	// output it numbered holds an in-flight mark (Begin.MaxInFlight),
	// its output number, which Finish or Release gives back.
	Marked bool
}

// Call is one tool output as recorded on the host side (never shown to the
// agent). Status is "ok" or "error"; Code and HostCode are set on errors.
type Call struct {
	OutputID  string
	Tool      string
	Status    string
	Code      string
	HostCode  string
	Admitted  int
	Withheld  int
	Omitted   int
	Truncated bool
	// Observed is the join of the admitted rows' confidentiality (the cfc
	// observedLabel); nil when nothing labeled was admitted.
	Observed  ifc.Confidentiality
	ExitCode  *int
	Duration  time.Duration
	StartedAt time.Time
	Entries   []CallEntry
	// TraceID is the W3C trace id of the call's trace, "" when tracing is
	// off.
	TraceID string

	// Failure is why the call failed, for the host only; nil unless it
	// ended command_failed, malformed_payload, schema_version_mismatch
	// or cancelled.
	Failure *Failure
}

// Failure is why a call failed, for the host only: no answer to an agent
// ever carries it (DESIGN.md). Reason is one of loom.Reasons; Detail a
// phrase the gateway built of what it saw; StderrTail the last bytes of
// loom's stderr as loom.StderrText gives them; Argv the argv loom was
// given (nil when none was built).
type Failure struct {
	Reason     string
	Detail     string
	StderrTail string
	Argv       []string
}

// CallEntry is the shape of one entry of a call, without its value: what an
// operator needs to see why a row was admitted or withheld.
type CallEntry struct {
	Status      string // "admitted" | "withheld"
	ReasonCode  string
	LabelSource string
	Label       ifc.Disclosed
	Handle      string
	Truncated   bool
}

// Finish is what ends a tool output (Store.Finish).
type Finish struct {
	// Refs are the referents the output admitted, minted under Limits.
	Refs   []Referent
	Limits MintLimits
	// Observed is joined into the run's model-context label; nil: the
	// label is left as it is.
	Observed ifc.Confidentiality
	// Base is the model-context label the caller last read (Begin's);
	// a store may take it as its first guess of the label Observed joins.
	Base ifc.Confidentiality
	// Call is the output's record; Finish sets the Handle of its admitted
	// entries.
	Call Call
	// Mark is the output number whose in-flight mark Finish gives back
	// with the rest (Run.Marked); 0: none. A mark no longer held
	// (expired) is nothing to give back.
	Mark int64
	// Seal, when not nil, makes the call's chain record, written in the
	// same step (chain.go); nil: the chain is not extended.
	Seal Seal
}

// ErrFinishShape is Finish's answer to a call record whose admitted
// entries are not as many as the referents: a caller's fault.
var ErrFinishShape = errors.New("store: finish: admitted entries and referents differ in number")

// Admitted is the number of c's entries of Status "admitted".
func Admitted(c Call) int {
	n := 0
	for _, e := range c.Entries {
		if e.Status == "admitted" {
			n++
		}
	}
	return n
}

// Referent is one held row of a run's handle table.
type Referent struct {
	Token       string
	Kind        string // "document"
	Source      string // the tool id that observed it
	Value       jsontext.Value
	Label       ifc.Label
	LabelSource string // "row" | "query"
}

// MintLimits caps a run's handle table when referents are minted
// (Finish): referents are registered in one atomic step and their tokens
// returned in order: an identity already held keeps its token; a new one
// gets a fresh token (MintToken). ErrHandleLimit, with nothing
// registered, if the new identities would take the table past Handles
// handles or its held bytes (Run.HandleBytes) past Bytes; identities
// already held cost nothing. A zero or negative field is no cap.
type MintLimits struct {
	// Handles caps the number of referents the table holds.
	Handles int
	// Bytes caps the table's held bytes: the sum of ReferentBytes over its
	// referents.
	Bytes int64
}

// ReferentBytes is what a referent counts against MintLimits.Bytes: the
// lengths of its Kind, Source, Value and LabelSource plus that of its
// label as Identity writes it, the compact JSON
// {"confidentiality":[...],"integrity":[...]}: the identity less its length
// prefixes. It is a function of the referent alone, so every store counts a table
// the same, whatever its own encoding costs; Token is not counted (a
// fixed width the handle count already bounds).
func ReferentBytes(r Referent) int64 {
	return int64(len(r.Kind) + len(r.Source) + len(r.Value) + len(r.LabelSource) + labelJSONLen(r.Label))
}

// Document is a row cited by a result, minted as a durable document.
type Document struct {
	ID     string
	Source string
	Value  jsontext.Value
	Label  ifc.Label
}

// Result is a run's written structured result.
type Result struct {
	Value     jsontext.Value
	Documents []Document
	Receipt   ifc.Label
	Label     ifc.Label
	WrittenAt time.Time
	// Seal, when not nil, makes the result write's chain record, written
	// with the result by PutResult (chain.go); never stored, nil as read.
	Seal Seal
}

// Store is the storage contract. Every method is safe for concurrent use.
// A run past its ExpiresAt is gone: every method answers ErrRunNotFound for
// it. Implementations that lose their backend answer ErrStoreUnavailable.
type Store interface {
	// CreateRun stores a new run. ErrRunExists if a live run has the id or
	// the token hash, ErrRunLimit if the store holds its maximum of live
	// runs (expired runs do not count).
	CreateRun(ctx context.Context, r Run) error
	// Run returns the run with the id, or ErrRunNotFound.
	Run(ctx context.Context, id string) (Run, error)
	// RunByToken returns the live run whose token hashes to h, or
	// ErrRunNotFound.
	RunByToken(ctx context.Context, h TokenHash) (Run, error)
	// Runs lists the live runs, oldest first: by CreatedAt, ties by ID.
	Runs(ctx context.Context) ([]Run, error)
	// RunsPage lists at most limit live runs (limit <= 0: one) after the
	// run key after, in Runs' order, from the first when after.ID is "",
	// and whether more live runs may follow. It reads about the page, not
	// every run: a run created after a page was read is listed on a later
	// page when its key is later, and a run gone meanwhile is skipped.
	RunsPage(ctx context.Context, after RunKey, limit int) ([]Run, bool, error)
	// DeleteRun removes a run and all its state, or ErrRunNotFound.
	DeleteRun(ctx context.Context, id string) error
	// CountRuns returns the number of live runs, copying none.
	CountRuns(ctx context.Context) (int, error)
	// PutTombstone records that the token hashed h opened run id, until
	// until (after it, the record is gone): a tombstone, so that the
	// token of a run that ended (deleted or expired) can be told its run
	// is over instead of being refused like a stranger's.
	PutTombstone(ctx context.Context, h TokenHash, id string, until time.Time) error
	// Tombstone returns the run id the token hashed h opened, while its
	// record lasts; ErrRunNotFound when there is none, or
	// ErrStoreUnavailable.
	Tombstone(ctx context.Context, h TokenHash) (string, error)

	// Begin starts an output of the run in one atomic step: it checks
	// b.Token, takes a call from the run's bucket of b.Rate and the next
	// output number and, under b.MaxInFlight, an in-flight mark for the
	// output, and returns the run as it then stands, its Seq the number
	// taken and Marked whether the mark was taken (a run holding
	// b.MaxInFlight marks that have not expired: the output is numbered,
	// with no mark; expired marks are dropped, not counted). ErrRunNotFound (no live run, or another
	// token), ErrOutputLimit (b.MaxSeq numbers taken), or a
	// *RateLimitError (ErrRateLimited) when the bucket holds less than
	// one call, in that order and each with nothing taken. Every store
	// sharing a backend shares the bucket and the marks; the rate, the
	// cap and the lease are the caller's, read at each call.
	Begin(ctx context.Context, id string, b Begin) (Run, error)
	// Release gives back the run's in-flight mark of output number mark
	// (Run.Marked), for an output that ends without Finish. A mark not
	// held, or a run gone, is nothing to release: nil. It only removes
	// data, so a store that refuses new data when full still runs it.
	Release(ctx context.Context, id string, mark int64) error
	// Observe joins conf into the run's model-context label
	// (ifc.JoinModelContext) atomically and returns the new label.
	// ErrLabelLimit, with nothing written, if the joined label would hold
	// more clauses than the store's MaxLabelClauses option.
	Observe(ctx context.Context, id string, conf ifc.Confidentiality) (ifc.Confidentiality, error)
	// AppendCall records a call in the run's call log.
	AppendCall(ctx context.Context, id string, c Call) error
	// Finish ends a tool output in one atomic step: it mints f.Refs (as
	// MintLimits says, under f.Limits), joins f.Observed into the run's model-context
	// label (as Observe; nil: no observation) and appends f.Call to the
	// call log, its admitted entries' Handle set to the minted tokens, and
	// returns the tokens in order, and gives back the in-flight mark
	// f.Mark. All of it is written or none of it: ErrRunNotFound,
	// ErrHandleLimit or ErrLabelLimit with nothing written (the mark
	// still held), so a call is in the log with every handle it minted,
	// or neither is there. f.Call's entries of Status "admitted" must be
	// as many as f.Refs, in the same order.
	Finish(ctx context.Context, id string, f Finish) ([]string, error)
	// CallsPage returns the records of the run's call log after its first
	// after, in order, at most limit of them (limit <= 0: all the rest, the
	// whole log for after 0),
	// and the number of records the log held when it was read; after past
	// the end answers none. It copies only the page, never the whole log.
	// A negative after counts as 0.
	CallsPage(ctx context.Context, id string, after, limit int) ([]Call, int, error)

	// Handles returns the run's handle table in minting order.
	Handles(ctx context.Context, id string) ([]Referent, error)
	// Handle returns the referent with the token, and whether it is held.
	Handle(ctx context.Context, id, token string) (Referent, bool, error)
	// Holds reports, for each of tokens in order, whether the run holds
	// it, and whether the run has its result, in one step that reads
	// only those tokens' entries (never the table, never a referent's
	// value). ErrTooManyTokens, with nothing read, for more than
	// MaxHolds tokens.
	Holds(ctx context.Context, id string, tokens []string) (held []bool, hasResult bool, err error)

	// PutResult stores the run's result. ErrResultExists if one is stored.
	PutResult(ctx context.Context, id string, res Result) error
	// Result returns the run's result, or ErrRunNotFound for the run and
	// ErrNoResult when none is written.
	Result(ctx context.Context, id string) (Result, error)

	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
}

// ErrNoResult is returned by Result for a run without a written result.
var ErrNoResult = errors.New("store: no result")

// DeleteWatch is what a store shared by replicas reports about the runs
// deleted through the other replicas, so that each replica can cancel the
// calls it has in flight for them. A store implements it with
//
//	WatchDeletes(ctx context.Context, w DeleteWatch)
//
// which reports until ctx is done and then returns (Redis does; Memory has
// one replica and needs none). The functions are called from the watching
// goroutine, one at a time; a nil one is skipped.
type DeleteWatch struct {
	// Deleted is called with the id of each run deleted (DeleteRun)
	// through another store sharing the backend. A delete through the
	// watching store itself is not reported (its caller knows), nor is a
	// run that expires.
	Deleted func(runID string)
	// Subscribed is called each time the watch starts receiving: the first
	// time and after every reconnection. Deletes made while it was not
	// receiving are not reported; a caller that must not miss one checks
	// the runs it cares about then.
	Subscribed func()
	// Failed is called with each error of the watch (the backend cannot
	// be reached, refuses the subscription or drops it). The watch goes on
	// retrying; the error wraps ErrStoreUnavailable.
	Failed func(err error)
}

// RunKey is a run's place in the order Store.Runs lists runs in: its
// CreatedAt, then its ID. The zero RunKey is before every run.
type RunKey struct {
	CreatedAt time.Time
	ID        string
}

// KeyOf is r's RunKey.
func KeyOf(r Run) RunKey { return RunKey{CreatedAt: r.CreatedAt, ID: r.ID} }

// After reports whether a run with key k is listed after one with key
// before; every run is after the zero RunKey.
func (k RunKey) After(before RunKey) bool {
	if before.ID == "" {
		return true
	}
	return CompareRuns(Run{CreatedAt: k.CreatedAt, ID: k.ID}, Run{CreatedAt: before.CreatedAt, ID: before.ID}) > 0
}

// CompareRuns is the order Store.Runs lists runs in: by creation time, then
// by id.
func CompareRuns(a, b Run) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// CloneConfidentiality returns a copy of c that shares no bytes with it;
// nil stays nil.
func CloneConfidentiality(c ifc.Confidentiality) ifc.Confidentiality {
	if c == nil {
		return nil
	}
	out := make(ifc.Confidentiality, len(c))
	for i, x := range c {
		out[i] = ifc.Clause(bytes.Clone(x))
	}
	return out
}

// Bucket is a run's rate bucket as a store keeps it: the calls it held
// at At (microseconds since the epoch). The zero Bucket is a full one.
type Bucket struct {
	Tokens float64
	At     int64
	Set    bool
}

// Take refills b at r from b.At to now (microseconds; a clock behind
// b.At refills nothing) and takes one call. It returns the bucket after
// and true, or b unchanged, false and how long until one call is there.
// Every store computes a bucket this way (the Redis script in Lua).
func (r Rate) Take(b Bucket, now int64) (Bucket, time.Duration, bool) {
	if r.PerSecond <= 0 {
		return b, 0, true
	}
	burst := float64(r.Burst)
	tokens, at := burst, now
	if b.Set {
		tokens, at = b.Tokens, b.At
		if now > at {
			tokens = min(burst, tokens+float64(now-at)*r.PerSecond/1e6)
			at = now
		}
	}
	if tokens < 1 {
		return b, time.Duration(math.Ceil((1-tokens)*1e6/r.PerSecond)) * time.Microsecond, false
	}
	return Bucket{Tokens: tokens - 1, At: at, Set: true}, 0, true
}
