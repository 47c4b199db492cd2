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
	h := store.HashToken(token)
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
	ctx, span := startCall(ctx, "describe_handle")
	defer span.End()
	c, err := s.beginOutput(ctx, run, "describe_handle")
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
