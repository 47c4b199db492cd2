package store

import (
	"context"
	"crypto/sha256"
	"errors"
)

// This file holds the run's chain (the receipt's call chain, package
// receipt): each record a finishing step writes (Finish, PutResult) is
// sealed into it, numbered from 1 and naming the hash of the record before
// it, in the same atomic step as the record itself, so that every store
// sharing a backend extends one chain with no gap and no fork.

// Tip is where a run's chain stands: its length and the hash of its last
// record (the zero Hash for an empty chain).
type Tip struct {
	Seq  int64
	Hash [sha256.Size]byte
}

// Sealed is a chain record: its bytes and the tip it makes.
type Sealed struct {
	Record []byte
	Tip    Tip
}

// Seal makes the chain record of a finishing step that extends the chain
// at tip, given the tokens the step mints for its referents, in order
// (none for a result). It must be a pure function of its arguments and
// of what the caller bound into it: a store may call it more than once
// with the tip and the tokens as it guesses them (a store that cannot
// hash inside its atomic step calls it before the step, and again when the
// step finds the chain or the tokens moved), and writes the record of the
// last call, whose Tip.Seq must be tip.Seq+1. An error of Seal ends the
// step with nothing written.
type Seal func(tokens []string, tip Tip) (Sealed, error)

// ErrChainMoved is what a store answers when the chain kept moving under
// a step that cannot hash inside its atomic step, past its retries.
var ErrChainMoved = errors.New("store: the run's chain moved under every attempt to extend it")

// ErrSealShape is a Seal's record that does not extend the tip by one.
var ErrSealShape = errors.New("store: a sealed record does not extend the chain by one")

// Chains is implemented by a store that keeps runs' chains.
type Chains interface {
	// Chain returns the run's chain records in order, or ErrRunNotFound.
	Chain(ctx context.Context, id string) ([][]byte, error)
}

// CheckSealed checks that s extends tip by one. It does not hash the
// record again (a record is a few KB, hashed once by its Seal): a Seal
// whose Tip.Hash is not its record's breaks the chain at its next link,
// which a verifier, and the gateway before it signs, finds.
func CheckSealed(s Sealed, tip Tip) error {
	if s.Tip.Seq != tip.Seq+1 || len(s.Record) == 0 {
		return ErrSealShape
	}
	return nil
}
