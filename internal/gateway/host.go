package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/reqid/reqctx"
	"github.com/loom-gateway/gateway/internal/store"
)

// RunSpec is what the host asks of a new run. Nil members take the
// gateway's defaults.
type RunSpec struct {
	// ID is the run id (the contract's pattern checked); nil: generated.
	ID *string
	// MaxConfidentiality is the manifest's ceiling, a JSON clause list;
	// it is met with the gateway's --max-confidentiality.
	MaxConfidentiality []byte
	// ModelContext is the starting model-context label's confidentiality,
	// a JSON clause list.
	ModelContext []byte
	// TTL is the run's lifetime; nil: Config.RunTTL.
	TTL *time.Duration
	// Tools are the tools the run may call, each one the gateway offers;
	// nil: every tool the gateway offers.
	Tools *[]string
}

// Created is a new run and its token, which is shown once: the store
// keeps only its hash.
type Created struct {
	Run   store.Run
	Token string
}

// CreateRun creates a run and issues its token: 256 random bits.
// A member of spec the gateway refuses is a *problem.InputError naming it.
func (s *Service) CreateRun(ctx context.Context, spec RunSpec) (Created, error) {
	run := store.Run{CreatedAt: WireTime(s.now()), Ceiling: s.cfg.MaxConfidentiality}
	if spec.ID != nil {
		// The contract's pattern admits them, but no client reaches a
		// path segment "." or "..": URL resolution removes it.
		if *spec.ID == "." || *spec.ID == ".." {
			return Created{}, Classify(problem.Invalid("/runId", problem.PatternMismatch, "The member /runId may not be \".\" or \"..\"."), "")
		}
		run.ID = *spec.ID
	} else {
		run.ID = "run-" + randomText(12)
	}
	if spec.MaxConfidentiality != nil {
		manifest, err := ifc.ParseCeiling(spec.MaxConfidentiality)
		if err != nil {
			return Created{}, Classify(problem.Invalid("/maxConfidentiality", problem.WrongType, "The member /maxConfidentiality is not a ceiling: a list of clauses, each a label or {\"anyOf\": [labels]}."), "")
		}
		run.Ceiling = ifc.Meet(s.cfg.MaxConfidentiality, ifc.CeilingOf(manifest))
	}
	if spec.ModelContext != nil {
		start, err := parseClauses(spec.ModelContext, "/modelContextLabel/confidentiality")
		if err != nil {
			return Created{}, err
		}
		run.ModelContext = ifc.JoinModelContext(nil, start)
		if s.cfg.MaxLabelClauses > 0 && len(run.ModelContext) > s.cfg.MaxLabelClauses {
			return Created{}, Classify(store.ErrLabelLimit, "")
		}
	}
	ttl := s.cfg.RunTTL
	if spec.TTL != nil {
		ttl = *spec.TTL
	}
	run.ExpiresAt = run.CreatedAt.Add(ttl)
	if spec.Tools != nil {
		run.Tools = []string{}
		for i, t := range *spec.Tools {
			tool, ok := loom.ParseTool(t)
			if !ok || !s.offered(tool) {
				return Created{}, Classify(toolFault(i, s.Offered()), "")
			}
			run.Tools = append(run.Tools, string(tool))
		}
	}
	token := randomText(32)
	run.TokenHash = store.HashToken(token)
	if err := s.cfg.Store.CreateRun(ctx, run); err != nil {
		return Created{}, Classify(err, "")
	}
	s.putTombstone(ctx, run)
	s.log.LogAttrs(ctx, slog.LevelInfo, "run created",
		slog.String("requestId", reqctx.FromContext(ctx)), slog.String("runId", run.ID),
		slog.Time("expiresAt", WireTime(run.ExpiresAt)))
	return Created{Run: run, Token: token}, nil
}

// Runs returns the live runs.
func (s *Service) Runs(ctx context.Context) ([]store.Run, error) {
	runs, err := s.cfg.Store.Runs(ctx)
	if err != nil {
		return nil, Classify(err, "")
	}
	return runs, nil
}

// DefaultRunsPage is how many runs a page of the run list holds when the
// host names no limit.
const DefaultRunsPage = 100

// RunsPage returns a page of the live runs, oldest first: at most limit
// of them (DefaultRunsPage when limit <= 0) after the place cursor names
// ("": the first page), and the cursor of the next page, "" when none
// follows. A cursor this gateway did not give is invalid input at
// "cursor".
func (s *Service) RunsPage(ctx context.Context, cursor string, limit int) ([]store.Run, string, error) {
	if limit <= 0 {
		limit = DefaultRunsPage
	}
	var after store.RunKey
	if cursor != "" {
		k, ok := parseRunsCursor(cursor)
		if !ok {
			return nil, "", Classify(problem.Invalid("cursor", problem.PatternMismatch, "The parameter cursor is not one this gateway gave: pass the nextCursor of a page."), "")
		}
		after = k
	}
	runs, more, err := s.cfg.Store.RunsPage(ctx, after, limit)
	if err != nil {
		return nil, "", Classify(err, "")
	}
	next := ""
	if more && len(runs) > 0 {
		next = runsCursor(store.KeyOf(runs[len(runs)-1]))
	}
	return runs, next, nil
}

// runsCursor writes a run key as a page cursor: base64url (unpadded) of
// the creation time in microseconds since the epoch, ".", and the run id.
// It names a place in the order, nothing a host could not list itself.
func runsCursor(k store.RunKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.CreatedAt.UnixMicro(), 10) + "." + k.ID))
}

// parseRunsCursor reads a runsCursor.
func parseRunsCursor(c string) (store.RunKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return store.RunKey{}, false
	}
	us, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 128 {
		return store.RunKey{}, false
	}
	return store.RunKey{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, true
}

// Run returns the run with id (run_not_found when there is none).
func (s *Service) Run(ctx context.Context, id string) (store.Run, error) {
	r, err := s.cfg.Store.Run(ctx, id)
	if err != nil {
		return store.Run{}, Classify(err, "")
	}
	return r, nil
}

// DeleteRun removes the run; its calls in flight on this replica answer
// cancelled (those on other replicas through FollowDeletes).
func (s *Service) DeleteRun(ctx context.Context, id string) error {
	deleted := s.signEnded(ctx, id, receiptDeleted) // before the chain goes with the run
	if err := s.cfg.Store.DeleteRun(ctx, id); err != nil {
		return Classify(err, "")
	}
	deleted()
	s.inflight.cancelRun(id)
	s.limited.forget(id)
	s.log.LogAttrs(ctx, slog.LevelInfo, "run deleted",
		slog.String("requestId", reqctx.FromContext(ctx)), slog.String("runId", id))
	return nil
}

// CallsPage returns the run's call records after its first after, at
// most limit of them (0: all), and the length of the whole log.
func (s *Service) CallsPage(ctx context.Context, id string, after, limit int) ([]store.Call, int, error) {
	calls, total, err := s.cfg.Store.CallsPage(ctx, id, after, limit)
	if err != nil {
		return nil, 0, Classify(err, "")
	}
	return calls, total, nil
}

// Observe joins another tool's label confidentiality (a JSON clause list)
// into the run's model-context label, the query label of the run's next
// call.
func (s *Service) Observe(ctx context.Context, id string, confidentiality []byte) error {
	conf, err := parseClauses(confidentiality, "/label/confidentiality")
	if err != nil {
		return err
	}
	if _, err := s.cfg.Store.Observe(ctx, id, conf); err != nil {
		return Classify(err, "")
	}
	return nil
}

// Handles returns the run's handle table, values and full labels: what a
// result writer on the host side needs.
func (s *Service) Handles(ctx context.Context, id string) ([]store.Referent, error) {
	refs, err := s.cfg.Store.Handles(ctx, id)
	if err != nil {
		return nil, Classify(err, "")
	}
	return refs, nil
}

// Result returns the run's result (result_not_found before one is
// written).
func (s *Service) Result(ctx context.Context, id string) (store.Result, error) {
	res, err := s.cfg.Store.Result(ctx, id)
	if err != nil {
		return store.Result{}, Classify(err, "")
	}
	return res, nil
}

// Ready checks that the store answers and the loom executable is there:
// each check's state ("ok", "unreachable", "missing") and whether all
// pass.
func (s *Service) Ready(ctx context.Context) (checks map[string]string, ok bool) {
	checks, ok = map[string]string{"store": "ok"}, true
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		checks["store"], ok = "unreachable", false
	}
	if s.cfg.LoomPath != "" {
		checks["loom"] = "ok"
		if !executable(s.cfg.LoomPath) {
			checks["loom"], ok = "missing", false
		}
	}
	return checks, ok
}

// executable reports whether path names a regular file someone may execute.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// parseClauses reads a host-supplied clause list strictly; a bad clause is
// invalid input at ptr.
func parseClauses(raw []byte, ptr string) (ifc.Confidentiality, error) {
	conf, err := ifc.ParseConfidentiality(raw)
	if err != nil {
		return nil, Classify(problem.Invalid(ptr, problem.WrongType, "The member "+ptr+" is not a list of clauses, each a label or {\"anyOf\": [labels]}."), "")
	}
	return conf, nil
}

// WireTime is a timestamp as the gateway writes it: UTC, to the
// millisecond.
func WireTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// randomText returns n random bytes as unpadded base64url.
func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// toolFault refuses element i of a run's tools: a tool this gateway does
// not offer.
func toolFault(i int, tools []loom.Tool) *problem.InputError {
	ptr := fmt.Sprintf("/tools/%d", i)
	offered := make([]string, len(tools))
	for i, t := range tools {
		offered[i] = string(t)
	}
	return problem.Invalid(ptr, problem.NotInChoices, "The member "+ptr+" must be one of the tools this gateway offers: "+strings.Join(offered, ", ")+".", offered...)
}
