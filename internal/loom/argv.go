package loom

import (
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Fixed reasons of an InputError.
const (
	ReasonNotObject   = "input must be a JSON object"
	ReasonUnknown     = "is not accepted by this tool"
	ReasonDuplicate   = "is given more than once"
	ReasonNull        = "must not be null"
	ReasonRequired    = "is required"
	ReasonString      = "must be a string"
	ReasonLength      = "must be 1 to 500 characters long"
	ReasonControl     = "must not contain control characters"
	ReasonDash        = "must not start with '-'"
	ReasonInteger     = "must be an integer of at least 1"
	ReasonBoolean     = "must be a boolean"
	ReasonEnum        = "must be one of"
	ReasonDate        = "must be a date written YYYY-MM-DD"
	ReasonQueryPerson = `is required unless "person" is given`
	ReasonLookup      = "must be an email, a phone number, a handle:, person: or group: id, or a People/<Name>/about.md path"
	ReasonAllDates    = `cannot be true together with "from" or "to"`
	ReasonWhere       = `is not accepted with read "where"`
)

// maxText is the bound of a free-text value, in UTF-16 code units.
const maxText = 500

// Enum choices, in declared order.
var (
	pageKinds  = []string{"all", "project", "projects", "entity", "entities"}
	rankKinds  = []string{"recency", "score"}
	shapeKinds = []string{"summary", "card"}
	readKinds  = []string{"where", "activity"}
)

// allowedKeys lists each tool's input fields.
var allowedKeys = map[Tool][]string{
	Search:       {"query", "sources", "since", "until", "tz", "person", "limit", "rank"},
	PageDiscover: {"kind", "limit"},
	PageInspect:  {"target"},
	PageRead:     {"target"},
	People:       {"query", "shape"},
	CalendarList: {"from", "to", "all"},
	Context:      {"read", "at", "since", "until"},
	Profile:      {"fresh"},
}

// Invocation is a tool input as BuildArgv read it: the argv of its loom
// command and what the call needs of the input once loom has run, so that
// the input is parsed once.
type Invocation struct {
	Tool Tool
	Argv []string
	// PersonLookup reports whether the call resolves a person, which is
	// what makes exit codes 1 and 3 with non-JSON stdout mean not_found
	// and contested (Decide): always for People, and for Search when the
	// input carries a "person" member.
	PersonLookup bool
}

// BuildArgv validates input, the raw JSON object the agent sent for tool, and
// returns its Invocation, whose Argv is the argv of the loom command:
// argv[0] is cfg.CLIPath, then the
// subcommand words, the positional, "--json", "--concise" for page discover
// and page inspect, and each option present as two elements, exactly as
// SEMANTICS (c) lays out. It is pure: it reads nothing but its arguments.
//
// Checks run in the order of (c), first failure wins: the input must be a
// JSON object; unknown keys (the first in JavaScript's key order: array-index
// names ascending, then the others as written); duplicate keys (a gateway
// addition: JavaScript would keep the last); then the tool's fields in the
// order (c) lists. Every refusal is an *InputError naming the field and, for
// an enum, the choices, never the value. A Tool that is not one of the eight
// returns ErrUnknownTool. cfg must not be nil.
func BuildArgv(cfg *Config, tool Tool, input []byte) (Invocation, error) {
	keys, ok := allowedKeys[tool]
	if !ok {
		return Invocation{}, ErrUnknownTool
	}
	in, err := parseInput(input, keys)
	if err != nil {
		return Invocation{}, err
	}
	argv, err := in.argv(cfg.CLIPath, tool)
	if err != nil {
		return Invocation{}, err
	}
	_, person := in["person"]
	return Invocation{Tool: tool, Argv: argv, PersonLookup: tool == People || tool == Search && person}, nil
}

// argv is the argv of tool's command for in, whose argv[0] is argv0.
func (in input) argv(argv0 string, tool Tool) ([]string, error) {
	argv := []string{argv0}
	switch tool {
	case Search:
		return in.search(argv)
	case PageDiscover:
		kind, hasKind, err := in.enum("kind", pageKinds)
		if err != nil {
			return nil, err
		}
		limit, hasLimit, err := in.integer("limit")
		if err != nil {
			return nil, err
		}
		argv = append(argv, "page", "discover", "--json", "--concise")
		argv = option(argv, hasKind, "--kind", kind)
		return option(argv, hasLimit, "--limit", limit), nil
	case PageInspect, PageRead:
		target, ok, err := in.text("target")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &InputError{Field: "target", Reason: ReasonRequired}
		}
		if tool == PageInspect {
			return append(argv, "page", "inspect", target, "--json", "--concise"), nil
		}
		return append(argv, "page", "read", target, "--json"), nil
	case People:
		return in.people(argv)
	case CalendarList:
		return in.calendar(argv)
	case Context:
		return in.context(argv)
	default: // Profile
		fresh, _, err := in.boolean("fresh")
		if err != nil {
			return nil, err
		}
		argv = append(argv, "profile", "--json")
		if fresh {
			argv = append(argv, "--fresh")
		}
		return argv, nil
	}
}

// input is a validated input object: each allowed key present at most once.
type input map[string]jsontext.Value

func parseInput(data []byte, allowed []string) (input, error) {
	ms, err := jsjson.Members(data, jsontext.AllowDuplicateNames(true)) // validates too
	if err != nil {
		return nil, &InputError{Reason: ReasonNotObject}
	}
	for _, k := range jsjson.KeyOrder(ms) {
		if !slices.Contains(allowed, k) {
			return nil, &InputError{Field: k, Reason: ReasonUnknown}
		}
	}
	in := make(input, len(ms))
	for _, m := range ms {
		if _, dup := in[m.Name]; dup {
			return nil, &InputError{Field: m.Name, Reason: ReasonDuplicate}
		}
		in[m.Name] = m.Value
	}
	return in, nil
}

// text applies the free-text rule to field: a JSON string of 1..500 UTF-16
// units, no character below U+0020, not starting with ASCII '-'.
func (in input) text(field string) (string, bool, error) {
	v, ok := in[field]
	if !ok {
		return "", false, nil
	}
	switch v.Kind() {
	case 'n':
		return "", true, &InputError{Field: field, Reason: ReasonNull}
	case '"':
	default:
		return "", true, &InputError{Field: field, Reason: ReasonString}
	}
	s, err := jsjson.UnquoteValue(v)
	switch n := jsjson.UTF16Len(s); {
	case err != nil:
		return "", true, &InputError{Field: field, Reason: ReasonString}
	case n < 1 || n > maxText:
		return "", true, &InputError{Field: field, Reason: ReasonLength}
	case hasControl(s):
		return "", true, &InputError{Field: field, Reason: ReasonControl}
	case s[0] == '-':
		return "", true, &InputError{Field: field, Reason: ReasonDash}
	}
	return s, true, nil
}

// integer applies the integer rule: a JSON number that is a safe integer of
// at least 1 (5.0 and 5e0 are 5), rendered as plain decimal.
func (in input) integer(field string) (string, bool, error) {
	v, ok := in[field]
	if !ok {
		return "", false, nil
	}
	switch v.Kind() {
	case 'n':
		return "", true, &InputError{Field: field, Reason: ReasonNull}
	case '0':
	default:
		return "", true, &InputError{Field: field, Reason: ReasonInteger}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 1 || f > 1<<53-1 || f != math.Trunc(f) {
		return "", true, &InputError{Field: field, Reason: ReasonInteger}
	}
	return strconv.FormatInt(int64(f), 10), true, nil
}

// enum requires field, when present, to be one of choices (case-sensitive).
func (in input) enum(field string, choices []string) (string, bool, error) {
	v, ok := in[field]
	if !ok {
		return "", false, nil
	}
	if v.Kind() == '"' {
		if s, err := jsjson.UnquoteValue(v); err == nil && slices.Contains(choices, s) {
			return s, true, nil
		}
	}
	return "", true, &InputError{Field: field, Reason: ReasonEnum, Choices: slices.Clone(choices)}
}

// boolean requires field, when present, to be a JSON boolean.
func (in input) boolean(field string) (bool, bool, error) {
	v, ok := in[field]
	if !ok {
		return false, false, nil
	}
	switch v.Kind() {
	case 't':
		return true, true, nil
	case 'f':
		return false, true, nil
	case 'n':
		return false, true, &InputError{Field: field, Reason: ReasonNull}
	}
	return false, true, &InputError{Field: field, Reason: ReasonBoolean}
}

// date is text plus the pattern ^\d{4}-\d{2}-\d{2}$ (ASCII digits).
func (in input) date(field string) (string, bool, error) {
	s, ok, err := in.text(field)
	if err != nil || !ok {
		return s, ok, err
	}
	if !isDate(s) {
		return "", true, &InputError{Field: field, Reason: ReasonDate}
	}
	return s, true, nil
}

func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// option appends flag and value when present.
func option(argv []string, present bool, flag, value string) []string {
	if !present {
		return argv
	}
	return append(argv, flag, value)
}

func (in input) search(argv []string) ([]string, error) {
	query, hasQuery, err := in.text("query")
	if err != nil {
		return nil, err
	}
	person, hasPerson, err := in.text("person")
	if err != nil {
		return nil, err
	}
	if !hasQuery && !hasPerson {
		return nil, &InputError{Field: "query", Reason: ReasonQueryPerson}
	}
	type opt struct {
		flag, value string
		present     bool
	}
	var opts []opt
	for _, f := range []string{"sources", "since", "until", "tz"} {
		v, ok, err := in.text(f)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt{"--" + f, v, ok})
	}
	opts = append(opts, opt{"--person", person, hasPerson})
	limit, hasLimit, err := in.integer("limit")
	if err != nil {
		return nil, err
	}
	opts = append(opts, opt{"--limit", limit, hasLimit})
	rank, hasRank, err := in.enum("rank", rankKinds)
	if err != nil {
		return nil, err
	}
	opts = append(opts, opt{"--rank", rank, hasRank})

	argv = append(argv, "search")
	if hasQuery {
		argv = append(argv, query)
	}
	argv = append(argv, "--json")
	for _, o := range opts {
		argv = option(argv, o.present, o.flag, o.value)
	}
	return argv, nil
}

func (in input) people(argv []string) ([]string, error) {
	query, ok, err := in.text("query")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &InputError{Field: "query", Reason: ReasonRequired}
	}
	if !isLookup(query) {
		return nil, &InputError{Field: "query", Reason: ReasonLookup}
	}
	shape, hasShape, err := in.enum("shape", shapeKinds)
	if err != nil {
		return nil, err
	}
	argv = append(argv, "people", query, "--json")
	return option(argv, hasShape, "--shape", shape), nil
}

// isLookup is the reference's lookup-shape heuristic: s contains '@', ':'
// or '/', or matches ^\+?\d[\d\s().-]{4,}$ with JavaScript's \s and ASCII \d.
func isLookup(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '@' || s[i] == ':' || s[i] == '/' {
			return true
		}
	}
	if len(s) > 0 && s[0] == '+' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return false
	}
	n := 0
	for _, r := range s[1:] {
		if !(r >= '0' && r <= '9' || isJSSpace(r) || r == '(' || r == ')' || r == '.' || r == '-') {
			return false
		}
		n++
	}
	return n >= 4
}

func (in input) calendar(argv []string) ([]string, error) {
	all, _, err := in.boolean("all")
	if err != nil {
		return nil, err
	}
	from, hasFrom, err := in.date("from")
	if err != nil {
		return nil, err
	}
	to, hasTo, err := in.date("to")
	if err != nil {
		return nil, err
	}
	if all && (hasFrom || hasTo) {
		return nil, &InputError{Field: "all", Reason: ReasonAllDates}
	}
	argv = append(argv, "calendar", "list", "--json")
	if all {
		return append(argv, "--all"), nil
	}
	argv = option(argv, hasFrom, "--from", from)
	return option(argv, hasTo, "--to", to), nil
}

func (in input) context(argv []string) ([]string, error) {
	read, ok, err := in.enum("read", readKinds)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &InputError{Field: "read", Reason: ReasonRequired, Choices: slices.Clone(readKinds)}
	}
	since, hasSince, err := in.text("since")
	if err != nil {
		return nil, err
	}
	until, hasUntil, err := in.text("until")
	if err != nil {
		return nil, err
	}
	if read == "where" && hasSince {
		return nil, &InputError{Field: "since", Reason: ReasonWhere}
	}
	if read == "where" && hasUntil {
		return nil, &InputError{Field: "until", Reason: ReasonWhere}
	}
	at, hasAt, err := in.text("at")
	if err != nil {
		return nil, err
	}
	argv = append(argv, "context", read, "--json")
	argv = option(argv, hasAt, "--at", at)
	argv = option(argv, hasSince, "--since", since)
	return option(argv, hasUntil, "--until", until), nil
}
