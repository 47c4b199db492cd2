package storetest

import (
	"fmt"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/store"
)

// Referent is a search row of about 230 bytes under a one-clause label,
// the typical referent, numbered n: what the stores' benchmarks mint.
func Referent(n int) store.Referent {
	return store.Referent{
		Kind:   "document",
		Source: "loom_search",
		Value: []byte(fmt.Sprintf(`{"id":"page-%08d","title":"Quarterly planning notes %d",`+
			`"snippet":"Agreed to move the review to Thursday and to share the draft with the team beforehand.",`+
			`"updated":"2025-03-14T09:26:53Z"}`, n, n)),
		Label: ifc.Label{
			Confidentiality: ifc.Confidentiality{ifc.Clause(`{"type":"https://commonfabric.org/cfc/atom/Space","space":"work"}`)},
			Integrity:       []ifc.Atom{ifc.Atom(`"loom"`)},
		},
		LabelSource: "row",
	}
}
