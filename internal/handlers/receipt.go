package handlers

import (
	"context"
	"errors"
	"net/http"

	"github.com/loom-gateway/gateway/api/host"
	"github.com/loom-gateway/gateway/internal/gateway"
	"github.com/loom-gateway/gateway/internal/receipt"
)

// GetReceipt returns the run's chain and, with a signing key, its
// receipt signed now; route_not_found when the gateway keeps no chains.
func (h *Host) GetReceipt(ctx context.Context, req host.GetReceiptRequestObject) (host.GetReceiptResponseObject, error) {
	d, err := h.d.Core.Receipt(ctx, req.RunId, receipt.ReasonRequested)
	if errors.Is(err, gateway.ErrNoChain) {
		return nil, errRouteNotFound
	}
	if err != nil {
		return nil, err
	}
	out := host.RunReceipt{RunId: d.RunID, Chain: make([]host.ChainLink, len(d.Chain))}
	for i, l := range d.Chain {
		out.Chain[i] = host.ChainLink{Seq: l.Seq, Hash: l.Hash, Record: l.Record}
	}
	if d.Receipt != nil {
		out.Receipt = &host.SignedReceipt{Payload: d.Receipt.Payload, Signature: d.Receipt.Signature, KeyId: d.Receipt.KeyID}
	}
	return marshalRaw(http.StatusOK, out)
}

// GetReceiptKeys returns the public keys the gateway's receipts verify
// with, the signing key's first.
func (h *Host) GetReceiptKeys(ctx context.Context, _ host.GetReceiptKeysRequestObject) (host.GetReceiptKeysResponseObject, error) {
	keys := h.d.Core.ReceiptKeys()
	out := host.ReceiptKeys{Keys: make([]host.ReceiptKey, len(keys))}
	signing := h.d.Core.ReceiptSigning()
	for i, k := range keys {
		out.Keys[i] = host.ReceiptKey{KeyId: receipt.KeyID(k), Algorithm: host.Ed25519, PublicKey: string(receipt.PublicKeyPEM(k)), Signing: i == 0 && signing}
	}
	return marshalRaw(http.StatusOK, out)
}

func (r rawJSON) VisitGetReceiptResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r rawJSON) VisitGetReceiptKeysResponse(w http.ResponseWriter) error { return r.write(w) }
