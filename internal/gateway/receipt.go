package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/problem"
	"github.com/loom-gateway/gateway/internal/receipt"
	"github.com/loom-gateway/gateway/internal/reqid/reqctx"
	"github.com/loom-gateway/gateway/internal/store"
)

// Receipts is the run receipt's configuration (Config.Receipts, package
// receipt): with it every call record and the result write are sealed
// into the run's chain in their store step, and the audit records carry
// the chain's facts.
type Receipts struct {
	// Chains reads the runs' chains: the store itself (Config.Store may
	// be a wrapper that hides the method).
	Chains store.Chains
	// Signer signs a run's receipt when the run is deleted and when the
	// host asks; nil: the chain is kept and served, no receipt signed.
	Signer *receipt.Signer
	// Verify are public keys served beside the signer's for verification
	// (keys rotated out, or in on other replicas).
	Verify []ed25519.PublicKey
	// Version is the gateway's version a receipt names.
	Version string
}

// chained reports whether the core keeps chains.
func (s *Service) chained() bool { return s.cfg.Receipts != nil }

// newEventID is a record's eventId: 128 random bits, hex.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sealCall is the Seal of call c's record rec (nil without chains). res
// is the measured result the call answers, nil for a call that answers an
// error: its record then has no responseDigest. The seal keeps the
// response bytes it digested in c.response, the bytes the call then
// answers, so that the record names exactly what was sent.
func (s *Service) sealCall(c *call, rec store.Call, res *ifc.Result) store.Seal {
	if !s.chained() {
		return nil
	}
	event, at := newEventID(), s.now()
	return func(tokens []string, tip store.Tip) (store.Sealed, error) {
		var body []byte
		if res != nil {
			body = res.AppendJSON(nil, tokens) // sized by AppendJSON
		}
		b, err := receipt.CallRecord(receipt.Meta{RunID: c.run.ID, Seq: tip.Seq + 1, EventID: event, Prev: tip.Hash, At: at}, rec, tokens, body)
		if err != nil {
			return store.Sealed{}, err
		}
		sealed := store.Sealed{Record: b, Tip: store.Tip{Seq: tip.Seq + 1, Hash: receipt.Hash(b)}}
		c.chain = &chained{event: event, sealed: sealed}
		c.response = body
		return sealed, nil
	}
}

// chained is what a call's audit record says of its chain record.
type chained struct {
	event  string
	sealed store.Sealed
}

// answer is the bytes a call that has its result answers: those its chain
// record digested, else the result written now.
func (c *call) answer(res ifc.Result, handles []string) []byte {
	if c.response != nil {
		return c.response
	}
	return res.AppendJSON(nil, handles) // sized by AppendJSON
}

// chainAttrs are the chain's facts an audit record carries: the record's
// schemaVersion, eventId, seq and hash.
func chainAttrs(attrs []slog.Attr, ch *chained) []slog.Attr {
	if ch == nil {
		return attrs
	}
	return append(attrs,
		slog.Int("schemaVersion", receipt.SchemaVersion),
		slog.String("eventId", ch.event),
		slog.Int64("seq", ch.sealed.Tip.Seq),
		slog.String("recordHash", hex.EncodeToString(ch.sealed.Tip.Hash[:])))
}

// sealResult is the Seal of the run's result write (nil without chains);
// it keeps what the audit record says of it in *out.
func (s *Service) sealResult(runID string, res store.Result, out **chained) store.Seal {
	if !s.chained() {
		return nil
	}
	event, at := newEventID(), s.now()
	return func(_ []string, tip store.Tip) (store.Sealed, error) {
		b, err := receipt.ResultRecord(receipt.Meta{RunID: runID, Seq: tip.Seq + 1, EventID: event, Prev: tip.Hash, At: at}, res)
		if err != nil {
			return store.Sealed{}, err
		}
		sealed := store.Sealed{Record: b, Tip: store.Tip{Seq: tip.Seq + 1, Hash: receipt.Hash(b)}}
		*out = &chained{event: event, sealed: sealed}
		return sealed, nil
	}
}

// auditResult writes the audit record of a result write that was sealed
// into the chain.
func (s *Service) auditResult(ctx context.Context, runID string, w Written, ch *chained) {
	if ch == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("requestId", reqctx.FromContext(ctx)),
		slog.String("runId", runID),
		slog.String("kind", receipt.KindResult),
		slog.String("status", "ok"),
		slog.Int("documents", w.Documents),
		slog.Int("links", w.Links),
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit", chainAttrs(attrs, ch)...)
}

// ErrNoChain is Receipt's answer when the gateway keeps no chains.
var ErrNoChain = errors.New("gateway: receipts are off")

// Receipt is the run's chain and, with a signing key, its receipt signed
// now for reason (receipt.ReasonRequested, ReasonDeleted, ReasonExpired).
func (s *Service) Receipt(ctx context.Context, runID, reason string) (receipt.Document, error) {
	if !s.chained() || s.cfg.Receipts.Chains == nil {
		return receipt.Document{}, ErrNoChain
	}
	run, err := s.cfg.Store.Run(ctx, runID)
	if err != nil {
		return receipt.Document{}, Classify(err, "")
	}
	records, err := s.cfg.Receipts.Chains.Chain(ctx, runID)
	if err != nil {
		return receipt.Document{}, Classify(err, "")
	}
	f := receipt.Facts{Run: run, Reason: reason, SignedAt: s.now(), Version: s.cfg.Receipts.Version}
	if run.HasResult || s.cfg.Receipts.Signer != nil {
		switch res, err := s.cfg.Store.Result(ctx, runID); {
		case err == nil:
			f.Result = &res
		case !errors.Is(err, store.ErrNoResult):
			return receipt.Document{}, Classify(err, "")
		}
	}
	return s.sign(ctx, f, records)
}

// sign makes the run's Document and, with a signing key, signs it; a
// chain that does not verify as the store holds it (changed in the
// backend) is served unsigned, and the first bad link logged at error
// level: the gateway does not vouch for it.
func (s *Service) sign(ctx context.Context, f receipt.Facts, records [][]byte) (receipt.Document, error) {
	d, err := receipt.Sign(s.cfg.Receipts.Signer, f, records)
	if err != nil {
		return receipt.Document{}, Classify(err, "")
	}
	if _, err := receipt.VerifyChain(f.Run.ID, d.Chain, nil); err != nil {
		s.log.ErrorContext(ctx, "run chain does not verify: receipt not signed", "runId", f.Run.ID, "error", err.Error())
		d.Receipt = nil
	}
	return d, nil
}

// ReceiptKeys are the public keys a receipt of this gateway verifies
// with: the signer's first, then the other verification keys; none when
// receipts are off.
func (s *Service) ReceiptKeys() []ed25519.PublicKey {
	if !s.chained() {
		return nil
	}
	var out []ed25519.PublicKey
	if s.cfg.Receipts.Signer != nil {
		out = append(out, s.cfg.Receipts.Signer.Public())
	}
	for _, k := range s.cfg.Receipts.Verify {
		if !slices.ContainsFunc(out, func(o ed25519.PublicKey) bool { return o.Equal(k) }) {
			out = append(out, k)
		}
	}
	return out
}

// receiptDeleted is the reason of a receipt signed as its run is deleted.
const receiptDeleted = receipt.ReasonDeleted

// signEnded signs the receipt of a run about to end for reason, and
// returns the function that writes it to the log, once the run has
// ended, as a "receipt" record for the host to keep: the payload and the
// signature whole, base64. Nothing without a signing key; a run already
// gone has nothing to sign.
func (s *Service) signEnded(ctx context.Context, runID, reason string) func() {
	if !s.chained() || s.cfg.Receipts.Signer == nil {
		return func() {}
	}
	d, err := s.Receipt(ctx, runID, reason)
	if err != nil {
		if CodeOf(err) != problem.RunNotFound {
			s.log.WarnContext(ctx, "receipt not signed", "runId", runID, "reason", reason, "code", CodeOf(err))
		}
		return func() {}
	}
	return func() { s.logReceipt(ctx, d, reason) }
}

// logReceipt writes d's signed receipt as a "receipt" log record.
func (s *Service) logReceipt(ctx context.Context, d receipt.Document, reason string) {
	if d.Receipt == nil {
		return
	}
	tip := receipt.Genesis
	if n := len(d.Chain); n > 0 {
		tip = receipt.Hash(d.Chain[n-1].Record)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "receipt",
		slog.String("requestId", reqctx.FromContext(ctx)),
		slog.String("runId", d.RunID),
		slog.String("reason", reason),
		slog.Int("schemaVersion", receipt.SchemaVersion),
		slog.Int("chainLength", len(d.Chain)),
		slog.String("chainTip", hex.EncodeToString(tip[:])),
		slog.String("keyId", d.Receipt.KeyID),
		slog.String("payload", base64.StdEncoding.EncodeToString(d.Receipt.Payload)),
		slog.String("signature", base64.StdEncoding.EncodeToString(d.Receipt.Signature)))
}

// ReceiptSigning reports whether the gateway signs receipts: then the
// first of ReceiptKeys is the signing key's.
func (s *Service) ReceiptSigning() bool { return s.chained() && s.cfg.Receipts.Signer != nil }

// Expired signs the receipt of a run that ended by expiring, given as
// the store removed it with its chain and result (memstore.SweepEnded),
// and writes it to the log as Receipt's "receipt" record. Nothing
// without a signing key.
func (s *Service) Expired(run store.Run, chain [][]byte, res *store.Result) {
	if !s.ReceiptSigning() {
		return
	}
	ctx := context.Background()
	d, err := s.sign(ctx, receipt.Facts{Run: run, Result: res, Reason: receipt.ReasonExpired, SignedAt: s.now(), Version: s.cfg.Receipts.Version}, chain)
	if err != nil {
		s.log.WarnContext(ctx, "receipt not signed", "runId", run.ID, "reason", receipt.ReasonExpired, "code", CodeOf(err))
		return
	}
	s.logReceipt(ctx, d, receipt.ReasonExpired)
}
