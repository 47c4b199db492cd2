package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"

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

// Check answers what Authenticate answers for the claim: nil when it
// opens its run. A face checks a claim with it before answering any
// error of its own, so a request that opens no run answers as if it had
// been authenticated first.
func (s *Service) Check(ctx context.Context, cl Claim) error {
	if cl.RunID == "" {
		return Classify(ErrUnauthorized, "")
	}
	_, err := s.authenticate(ctx, cl.RunID, cl.Token)
	return err
}

// Description is describe_handle's answer, in Gateway decision 10's order:
// a held referent's kind, source tool, labelSource and atom types, never
// its value.
type Description struct {
	OutputID string         `json:"outputId"`
	Token    string         `json:"token"`
	Known    bool           `json:"known"`
	Referent *ReferentKind  `json:"referent,omitempty"`
	Label    *ifc.Disclosed `json:"label,omitempty"`
}

// ReferentKind is what describe_handle tells of a held referent.
type ReferentKind struct {
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
		d.Referent = &ReferentKind{Kind: ref.Kind, Source: ref.Source, LabelSource: ref.LabelSource}
		disclosed := ifc.Disclose(ref.Label)
		d.Label = &disclosed
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
func (s *Service) WriteResult(ctx context.Context, run store.Run, value []byte) (Written, error) {
	// A run that has its result (as auth read it) refuses another before
	// the handle table is copied and the body resolved against it, so
	// repeating a write costs nothing; PutResult still holds the rule
	// atomically for writes that race.
	if run.HasResult {
		return Written{}, Classify(store.ErrResultExists, "")
	}
	held, err := s.cfg.Store.Handles(ctx, run.ID)
	if err != nil {
		return Written{}, Classify(err, "")
	}
	res, links, err := result.Write(value, run.ID, held)
	switch {
	case errors.Is(err, result.ErrTooDeep):
		return Written{}, Classify(problem.Invalid("/value", problem.TooDeep, "The member /value nests deeper than the result writer takes."), "")
	case errors.Is(err, result.ErrInvalidValue):
		return Written{}, Classify(problem.Invalid("/value", problem.NotJson, "The member /value is not one JSON value."), "")
	case err != nil:
		return Written{}, Classify(err, "")
	}
	res.WrittenAt = s.now()
	if err := s.cfg.Store.PutResult(ctx, run.ID, res); err != nil {
		return Written{}, Classify(err, "")
	}
	return Written{Documents: len(res.Documents), Links: links}, nil
}
