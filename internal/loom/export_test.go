package loom

// What the external tests read of the package's insides.

// RaceEnabled is raceEnabled.
const RaceEnabled = raceEnabled

// The bounds of what Condense holds, and the UTF-16 units of a long string
// value it keeps.
const (
	MaxNameBytes     = maxNameBytes
	MaxNumberBytes   = maxNumberBytes
	MaxOpenMembers   = maxOpenMembers
	MaxOpenNameBytes = maxOpenNameBytes
	MaxEnvelopeBytes = maxEnvelopeBytes
	CondenseUnits    = condenseUnits
)

// ScalarByte is scalarByte.
var ScalarByte = &scalarByte

// EnvelopeIndex is envelopeIndex.
func EnvelopeIndex(name string, keys []string) int { return envelopeIndex(name, keys) }

// MeasuringFrom is m judging rows once the list kept is past from bytes
// (pruneFrom).
func MeasuringFrom(m Measuring, from int) *Measuring {
	m.from, m.fromSet = from, true
	return &m
}

// PruneFrom is pruneFrom.
const PruneFrom = pruneFrom
