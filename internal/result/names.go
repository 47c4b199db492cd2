package result

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/store"
)

// MaxNames bounds the distinct handle tokens one result may name, cited
// or as inert text: what the result writer asks the store about in one
// step (store.MaxHolds). A run holds at most as many handles as its host
// allows, and a result that cites a thousand rows is far past what a
// model writes; a value naming more is refused (ErrTooManyNames) before
// the store is asked anything.
const MaxNames = store.MaxHolds

// ErrTooManyNames reports a value naming more than MaxNames distinct
// handle tokens.
var ErrTooManyNames = errors.New("result: value names more handle tokens than a result may")

// Names reads value as Write does and returns the distinct tokens it
// names that a run could hold (cfh:v: and 5 alphabet characters), in
// order of first appearance: every token-shaped run (store.TokenPattern)
// of every string and member name, a link's text included. These are
// the only tokens Write looks up in the table, so a value Names accepts
// and whose names the run all holds is one Write resolves. It reads no
// store: a value Write would refuse whatever the table holds is refused
// here, ErrInvalidValue, ErrTooDeep, or ErrUnheldHandle for a
// token-shaped run no store can hold (a cfh:a: token, a run of more
// than 5 characters), as is one naming more than MaxNames tokens
// (ErrTooManyNames).
func Names(value []byte) ([]string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(value), jsontext.AllowInvalidUTF8(true))
	var names []string
	seen := map[string]struct{}{}
	for {
		switch dec.PeekKind() {
		case '{', '[':
			if dec.StackDepth() >= maxDepth {
				return nil, ErrTooDeep
			}
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, invalid(err)
		}
		if tok.Kind() == '"' {
			if s := tok.String(); strings.Contains(s, "cfh:") {
				for _, m := range store.TokenPattern.FindAllString(s, -1) {
					if !isHeldShape(m) {
						return nil, ErrUnheldHandle
					}
					if _, dup := seen[m]; dup {
						continue
					}
					if len(names) == MaxNames {
						return nil, ErrTooManyNames
					}
					seen[m] = struct{}{}
					names = append(names, m)
				}
			}
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, invalid(err)
	}
	return names, nil
}
