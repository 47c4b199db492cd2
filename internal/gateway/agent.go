package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/result"
	"github.com/loom-gateway/gateway/internal/store"
)

// Authenticate opens the run named runID with an agent's bearer token. A
// token that opens no run is ErrUnauthorized whatever the id, and a valid
// token of another run is ErrRunNotFound, so run ids cannot be probed.
// runID "" asks only whether the token opens some run: it returns the zero
// Run and nil when it does. Store failures are returned classified.
func (s *Service) Authenticate(ctx context.Context, runID, token string) (store.Run, error) {
	if token == "" {
		return store.Run{}, Classify(ErrUnauthorized, "")
	}
	return s.authenticate(ctx, runID, store.HashToken(token))
}

// authenticate is Authenticate of a token hashed h.
func (s *Service) authenticate(ctx context.Context, runID string, h store.TokenHash) (store.Run, error) {
	if runID != "" {
		run, err := s.cfg.Store.Run(ctx, runID)
		switch {
		case err == nil && subtle.ConstantTimeCompare(run.TokenHash[:], h[:]) == 1:
			return run, nil
		case err != nil && !errors.Is(err, store.ErrRunNotFound):
			return store.Run{}, Classify(err, "")
		}
	}
	_, err := s.cfg.Store.RunByToken(ctx, h)
	switch {
	case errors.Is(err, store.ErrRunNotFound):
		return store.Run{}, s.ended(ctx, h, runID, Classify(ErrUnauthorized, ""))
	case err != nil:
		return store.Run{}, Classify(err, "")
	case runID == "":
		return store.Run{}, nil
	}
	return store.Run{}, Classify(ErrRunNotFound, "")
}

// Admit is Authenticate for an agent request that is not a tool output
// (a ping, a catalog read, a result write, any request of the MCP face
// but a tools/call of a tool): it opens the run and takes one call from
// the run's rate bucket (RunRate), the budget every request of the run
// spends, tool calls and all, in the one store step that reads the run
// (Store.Begin of NoOutput), so it costs what Authenticate costs. A run
// past its budget answers rate_limited (with its Retry-After), and once
// the bucket has refused it this replica refuses the run's requests
// without a store step until the bucket holds a call again, as it does
// its tool calls (notBefore). runID "" asks only what Authenticate asks;
// with no RunRate it is Authenticate.
func (s *Service) Admit(ctx context.Context, runID, token string) (store.Run, error) {
	if token == "" || runID == "" || s.cfg.RunRate.PerSecond <= 0 {
		return s.Authenticate(ctx, runID, token)
	}
	return s.admit(ctx, ClaimOf(runID, token))
}

// CheckAdmit is Check that also takes one call from the run's budget,
// as Admit does: the check of a claim answered before its output took
// a number (a tool call refused as invalid input), so that such a
// request spends the budget too.
func (s *Service) CheckAdmit(ctx context.Context, cl Claim) error {
	if cl.RunID == "" || s.cfg.RunRate.PerSecond <= 0 {
		return s.AuthenticateClaim(ctx, cl)
	}
	_, err := s.admit(ctx, cl)
	return err
}

// Spend takes one call from the budget of run, a run opened already (the
// MCP face's requests other than a tool's tools/call), as Admit does.
func (s *Service) Spend(ctx context.Context, run store.Run) error {
	if s.cfg.RunRate.PerSecond <= 0 {
		return nil
	}
	_, err := s.admit(ctx, claimOf(run))
	return err
}

// admit is Admit of a claim.
func (s *Service) admit(ctx context.Context, cl Claim) (store.Run, error) {
	now := s.now()
	if wait, ok := s.limited.wait(cl, now, s.refill()); ok {
		return store.Run{}, Classify(&store.RateLimitError{RetryAfter: wait}, "")
	}
	run, err := s.cfg.Store.Begin(ctx, cl.RunID, store.Begin{Token: &cl.Token, Rate: s.cfg.RunRate, NoOutput: true})
	if rl, ok := errors.AsType[*store.RateLimitError](err); ok {
		s.limited.set(cl, now, now.Add(rl.RetryAfter))
		return store.Run{}, Classify(err, "")
	}
	s.limited.answered(cl, err == nil, s.now())
	switch {
	case errors.Is(err, store.ErrRunNotFound):
		if err := s.AuthenticateClaim(ctx, cl); err != nil {
			return store.Run{}, err
		}
		return store.Run{}, Classify(store.ErrRunNotFound, "") // gone since Begin looked
	case err != nil:
		return store.Run{}, Classify(err, "")
	}
	return run, nil
}

// A Claim is an agent request's claim to a run, not yet checked: the
// run id of its path and the hash of its bearer token. CallClaim and
// DescribeClaim check it in the store step that takes the output number
// (Store.Begin), so an output reads the store once before its work; a
// claim that opens no run answers what Authenticate answers.
type Claim struct {
	RunID string
	Token store.TokenHash
}

// ClaimOf is the claim of a request on runID's path with a bearer token.
func ClaimOf(runID, token string) Claim {
	return Claim{RunID: runID, Token: store.HashToken(token)}
}

// claimOf is the claim of a run Authenticate opened.
func claimOf(run store.Run) Claim { return Claim{RunID: run.ID, Token: run.TokenHash} }

// AuthenticateClaim answers what Authenticate answers for the claim: nil when it
// opens its run. A face checks a claim with it before answering any
// error of its own, so a request that opens no run answers as if it had
// been authenticated first.
func (s *Service) AuthenticateClaim(ctx context.Context, cl Claim) error {
	if cl.RunID == "" {
		return Classify(ErrUnauthorized, "")
	}
	_, err := s.authenticate(ctx, cl.RunID, cl.Token)
	return err
}

// Description is describe_handle's answer, in Gateway decision 10's order:
// a held referent's kind, source tool, labelSource and atom types, never
// its value; and when the handle ends, its run's expiry (none for a run
// without one).
type Description struct {
	OutputID  string         `json:"outputId"`
	Token     string         `json:"token"`
	Known     bool           `json:"known"`
	Referent  *Referent      `json:"referent,omitempty"`
	Label     *ifc.Disclosed `json:"label,omitempty"`
	ExpiresAt *time.Time     `json:"expiresAt,omitempty"`
}

// Referent is what describe_handle tells of a held referent.
type Referent struct {
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	LabelSource string `json:"labelSource"`
}

// Describe answers describe_handle for token (white space around it
// ignored). It is an output of the run like a tool call: it takes an
// output number and appends a call record.
func (s *Service) Describe(ctx context.Context, run store.Run, token string) (Description, error) {
	return s.DescribeClaim(ctx, claimOf(run), token)
}

// DescribeClaim is Describe for a claim to a run, checked as it takes its
// output number.
func (s *Service) DescribeClaim(ctx context.Context, cl Claim, token string) (Description, error) {
	ctx, span := startCall(ctx, "describe_handle")
	defer span.End()
	c, err := s.beginOutput(ctx, cl, "describe_handle", 0)
	if err != nil {
		return Description{}, err
	}
	token = strings.TrimSpace(token)
	ref, held, err := s.cfg.Store.Handle(ctx, c.run.ID, token)
	if err != nil {
		return Description{}, s.fail(ctx, c, err)
	}
	d := Description{OutputID: c.outputID, Token: token, Known: held}
	if held {
		d.Referent = &Referent{Kind: ref.Kind, Source: ref.Source, LabelSource: ref.LabelSource}
		disclosed := ifc.Disclose(ref.Label)
		d.Label = &disclosed
		if !c.run.ExpiresAt.IsZero() {
			end := WireTime(c.run.ExpiresAt)
			d.ExpiresAt = &end
		}
	}
	s.record(ctx, c, store.Call{
		OutputID: c.outputID, Tool: c.tool, Status: "ok",
		Duration: s.now().Sub(c.started), StartedAt: c.started,
	})
	return d, nil
}

// Written is what the result writer reports of a stored result.
type Written struct {
	Documents int
	Links     int
}

// WriteResult resolves the agent's structured result (value, one JSON
// value) against the run's held referents and stores it; a run has one
// result, and a value naming an unheld token stores nothing
// (unheld_handle).
//
// What a write costs is what its value names, not the run's table: the
// value is read first (result.Names), and one naming more than
// result.MaxNames tokens, or one no table can resolve, is refused with no
// store step; then one store step asks about only the tokens it names
// (Store.Holds, which answers too whether the result is written), and a
// value naming an unheld one is refused there. Only a write that will
// store reads the run's table (its labels make the result's label and
// receipt), once: a run has one result, and the writes of one run on
// this replica go one at a time, so a second write finds the first's
// result in its Holds.
func (s *Service) WriteResult(ctx context.Context, run store.Run, value []byte) (Written, error) {
	// A run that has its result (as auth read it) refuses another before
	// anything is read.
	if run.HasResult {
		return Written{}, Classify(store.ErrResultExists, "")
	}
	names, err := result.Names(value)
	if err != nil {
		return Written{}, writeError(err)
	}
	defer s.writing.lock(run.ID)()
	held, written, err := s.cfg.Store.Holds(ctx, run.ID, names)
	switch {
	case err != nil:
		return Written{}, Classify(err, "")
	case written:
		return Written{}, Classify(store.ErrResultExists, "")
	case slices.Contains(held, false):
		return Written{}, Classify(result.ErrUnheldHandle, "")
	}
	table, err := s.cfg.Store.Handles(ctx, run.ID)
	if err != nil {
		return Written{}, Classify(err, "")
	}
	res, links, err := result.Write(value, run.ID, table)
	if err != nil {
		return Written{}, writeError(err)
	}
	res.WrittenAt = s.now()
	var ch *chained
	res.Seal = s.sealResult(run.ID, res, &ch)
	if err := s.cfg.Store.PutResult(ctx, run.ID, res); err != nil {
		return Written{}, Classify(err, "")
	}
	w := Written{Documents: len(res.Documents), Links: links}
	s.auditResult(ctx, run.ID, w, ch)
	return w, nil
}

// writeError classifies an error of result.Names or result.Write.
func writeError(err error) error {
	switch {
	case errors.Is(err, result.ErrTooDeep):
		return Classify(problem.Invalid("/value", problem.TooDeep, "The member /value nests deeper than the result writer takes."), "")
	case errors.Is(err, result.ErrInvalidValue):
		return Classify(problem.Invalid("/value", problem.NotJson, "The member /value is not one JSON value."), "")
	case errors.Is(err, result.ErrTooManyNames):
		return Classify(problem.Invalid("/value", problem.TooLong, "The member /value names more handle tokens than a result may ("+strconv.Itoa(result.MaxNames)+")."), "")
	}
	return Classify(err, "")
}

// runLocks serializes one kind of work per run on this replica: a
// mutex per run id, dropped when no one holds or waits for it.
type runLocks struct {
	mu    sync.Mutex
	locks map[string]*runLock
}

type runLock struct {
	mu    sync.Mutex
	users int
}

// lock takes the run's lock and returns the function that gives it
// back.
func (l *runLocks) lock(runID string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*runLock{}
	}
	rl := l.locks[runID]
	if rl == nil {
		rl = &runLock{}
		l.locks[runID] = rl
	}
	rl.users++
	l.mu.Unlock()
	rl.mu.Lock()
	return func() {
		rl.mu.Unlock()
		l.mu.Lock()
		if rl.users--; rl.users == 0 {
			delete(l.locks, runID)
		}
		l.mu.Unlock()
	}
}
