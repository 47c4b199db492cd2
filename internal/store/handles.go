package store

import (
	"crypto/sha256"
	"encoding/binary"
	"regexp"
	"strconv"

	"github.com/loom-gateway/gateway/internal/ifc"
)

// tokenAlphabet is the 30 characters a token suffix is drawn from: digits
// 2-9 and lowercase letters without i, l, o, u (SEMANTICS (i)).
const tokenAlphabet = "23456789abcdefghjkmnpqrstvwxyz"

// ValueTokenPrefix starts every referent token; AddressTokenPrefix starts
// the sibling address tokens, which the gateway never holds.
const (
	ValueTokenPrefix   = "cfh:v:"
	AddressTokenPrefix = "cfh:a:"
)

// TokenWidth is the number of alphabet characters in a minted token.
const TokenWidth = 5

// tokenLen is the length of every minted token ("cfh:v:" + 5).
const tokenLen = len(ValueTokenPrefix) + TokenWidth

// TokenPattern recognises handle tokens in free text: either prefix followed
// by 5 or more alphabet characters. A match longer than a minted token is
// token-shaped but never held.
var TokenPattern = regexp.MustCompile(`cfh:[av]:[23456789abcdefghjkmnpqrstvwxyz]{5,}`)

// IsValueToken reports whether the whole of s is a referent token as
// TokenPattern recognises it: "cfh:v:" and 5 or more alphabet characters.
// Only those with exactly 5 can be held.
func IsValueToken(s string) bool {
	return len(s) >= tokenLen && s[:len(ValueTokenPrefix)] == ValueTokenPrefix &&
		allAlphabet(s[len(ValueTokenPrefix):])
}

// IsToken reports whether the whole of s is a handle token of either prefix
// as TokenPattern recognises it.
func IsToken(s string) bool {
	return IsValueToken(s) || len(s) >= tokenLen &&
		s[:len(AddressTokenPrefix)] == AddressTokenPrefix &&
		allAlphabet(s[len(AddressTokenPrefix):])
}

func allAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		if !inAlphabet(s[i]) {
			return false
		}
	}
	return true
}

func inAlphabet(c byte) bool {
	switch {
	case '2' <= c && c <= '9':
		return true
	case 'a' <= c && c <= 'z':
		return c != 'i' && c != 'l' && c != 'o' && c != 'u'
	}
	return false
}

// Identity returns the canonical encoding of a referent's identity, the
// tuple (kind, source, value, label, labelSource) that decides whether two
// registrations are the same referent (SEMANTICS (i)). Each field is written
// as a uvarint length followed by its bytes. The value is used as given (it
// is the compact JSON the model saw); the label is written as the compact
// JSON object {"confidentiality":[...],"integrity":[...]} from the clause
// and atom texts as given, so a nil and an empty list encode alike. Token is
// not part of the identity.
func Identity(r Referent) []byte {
	n := len(r.Kind) + len(r.Source) + len(r.Value) + len(r.LabelSource) +
		labelJSONLen(r.Label) + 5*binary.MaxVarintLen64
	return AppendIdentity(make([]byte, 0, n), r)
}

func AppendIdentity(b []byte, r Referent) []byte {
	b = appendField(b, r.Kind)
	b = appendField(b, r.Source)
	b = binary.AppendUvarint(b, uint64(len(r.Value)))
	b = append(b, r.Value...)
	b = binary.AppendUvarint(b, uint64(labelJSONLen(r.Label)))
	b = appendLabelJSON(b, r.Label)
	return appendField(b, r.LabelSource)
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

const (
	labelOpen  = `{"confidentiality":[`
	labelMid   = `],"integrity":[`
	labelClose = `]}`
)

// labelJSONLen is len(appendLabelJSON(nil, l)).
func labelJSONLen(l ifc.Label) int {
	n := len(labelOpen) + len(labelMid) + len(labelClose)
	for i, c := range l.Confidentiality {
		if i > 0 {
			n++
		}
		n += len(c)
	}
	for i, a := range l.Integrity {
		if i > 0 {
			n++
		}
		n += len(a)
	}
	return n
}

func appendLabelJSON(b []byte, l ifc.Label) []byte {
	b = append(b, labelOpen...)
	for i, c := range l.Confidentiality {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c...)
	}
	b = append(b, labelMid...)
	for i, a := range l.Integrity {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, a...)
	}
	return append(b, labelClose...)
}

// MintToken derives a referent token: "cfh:v:" followed by 5 characters,
// the i-th being tokenAlphabet[b[i] mod 30] for the first 5 bytes b of
// SHA-256(runID "\x00" identity), with "\x00" and the decimal attempt
// appended to the preimage when attempt > 0. Attempt 0 is the first try;
// a store retries with 1, 2, ... while the token is held by a different
// identity. Tokens are deterministic per run and unrelated across runs.
func MintToken(runID string, identity []byte, attempt int) string {
	s := TokenSuffix(runID, identity, attempt)
	return string(append([]byte(ValueTokenPrefix), s[:]...))
}

// TokenSuffix is the 5-character suffix MintToken writes.
func TokenSuffix(runID string, identity []byte, attempt int) [TokenWidth]byte {
	h := sha256.New()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write(identity)
	if attempt > 0 {
		var buf [24]byte
		b := append(buf[:0], 0)
		h.Write(strconv.AppendInt(b, int64(attempt), 10))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return SuffixOf(&sum)
}

// SuffixOf maps the first 5 bytes of a digest onto the alphabet.
func SuffixOf(sum *[sha256.Size]byte) [TokenWidth]byte {
	var s [TokenWidth]byte
	for i := range s {
		s[i] = tokenAlphabet[int(sum[i])%len(tokenAlphabet)]
	}
	return s
}

// TokenKey returns the suffix of a minted-width value token, and false for
// anything else (which no store holds).
func TokenKey(token string) ([TokenWidth]byte, bool) {
	var k [TokenWidth]byte
	if len(token) != tokenLen || !IsValueToken(token) {
		return k, false
	}
	copy(k[:], token[len(ValueTokenPrefix):])
	return k, true
}
