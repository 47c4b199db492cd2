// Package sampleloom is a tiny stand-in for the loom CLI over embedded,
// invented sample data, for the gateway's --demo mode and for end-to-end
// tests. It answers the eight retrieval commands in exactly the argv shapes
// loom.BuildArgv produces, prints JSON the way loom does, and uses loom's
// exit codes: 1 with non-JSON stdout for a person lookup that matches no
// one, 3 for one that matches several, 1 with hasProfile:false for the
// profile fallback tier, 2 for a usage error (message on stderr, nothing on
// stdout).
//
// Rows carry `ifc` labels over the atoms https://loom.example/facet/work,
// .../facet/home and .../facet/health: some rows are labeled, some are not,
// some are labeled above a work-only ceiling, and some carry an `ifc` that
// cannot be read, so every outcome of the gateway's measurement shows up.
// The data lives in data/*.json; README-level detail is in those files.
package sampleloom

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed data/*.json
var data embed.FS

// Main runs the sample loom. args is the whole argument vector (args[0],
// the program name, is ignored), env the process environment as
// os.Environ returns it. It returns the exit status. It reads nothing but
// its arguments and the embedded data, and is safe for concurrent use.
func Main(args []string, env []string, stdout, stderr io.Writer) int {
	r := &run{env: envMap(env), stdout: stdout, stderr: stderr}
	if len(args) > 0 {
		args = args[1:]
	}
	return r.main(args)
}

type run struct {
	env            map[string]string
	stdout, stderr io.Writer
}

// usageError is a command-line mistake: exit 2, message on stderr.
type usageError string

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (r *run) main(args []string) (code int) {
	defer func() {
		if e := recover(); e != nil {
			u, ok := e.(usageError)
			if !ok {
				panic(e)
			}
			fmt.Fprintf(r.stderr, "loom: %s\n", string(u))
			code = 2
		}
	}()
	if len(args) == 0 {
		panic(usageError("usage: loom <search|page|people|calendar|context|profile> ... [--json]"))
	}
	broker := r.env["LOOM_PAGE_RPC_QUEUE"] != "" && r.env["LOOM_SEARCH_BROKER_QUEUE"] != ""
	direct := r.env["LOOM_INSTANCE_DIR"] != "" && r.env["LOOM_DISPATCH_ID"] != ""
	if !broker && !direct {
		panic(usageError("no broker queue or instance configured (LOOM_PAGE_RPC_QUEUE / LOOM_INSTANCE_DIR)"))
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "search":
		return r.search(parse(rest, 1, "--sources", "--since", "--until", "--tz", "--person", "--limit", "--rank"))
	case "page":
		if len(rest) == 0 {
			panic(usageError("page: want discover, inspect or read"))
		}
		switch rest[0] {
		case "discover":
			return r.discover(parse(rest[1:], 0, "--kind", "--limit", "?--concise"))
		case "inspect":
			return r.page(parse(rest[1:], 1, "?--concise"), false)
		case "read":
			return r.page(parse(rest[1:], 1), true)
		}
		panic(usageError("page: unknown subcommand"))
	case "people":
		return r.people(parse(rest, 1, "--shape"))
	case "calendar":
		if len(rest) == 0 || rest[0] != "list" {
			panic(usageError("calendar: want list"))
		}
		return r.calendar(parse(rest[1:], 0, "--from", "--to", "?--all"))
	case "context":
		return r.context(parse(rest, 1, "--at", "--since", "--until"))
	case "profile":
		return r.profile(parse(rest, 0, "?--fresh"))
	}
	panic(usageError("unknown command"))
}

// cmdline is a parsed command line: positionals, flag values, switches.
type cmdline struct {
	pos   []string
	vals  map[string]string
	flags map[string]bool
}

func (c cmdline) val(name string) (string, bool) { v, ok := c.vals[name]; return v, ok }

// parse reads args: at most maxPos positionals, the value flags listed, and
// the switches listed with a leading "?"; --json is always a switch. Any
// other flag, a repeated flag, a missing value or an extra positional is a
// usage error.
func parse(args []string, maxPos int, spec ...string) cmdline {
	c := cmdline{vals: map[string]string{}, flags: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json" || slices.Contains(spec, "?"+a):
			if c.flags[a] {
				panic(usageError(a + " given twice"))
			}
			c.flags[a] = true
		case slices.Contains(spec, a):
			if i+1 >= len(args) {
				panic(usageError(a + " needs a value"))
			}
			if _, dup := c.vals[a]; dup {
				panic(usageError(a + " given twice"))
			}
			i++
			c.vals[a] = args[i]
		case strings.HasPrefix(a, "-"):
			panic(usageError("unknown option " + strconv.Quote(a)))
		default:
			if len(c.pos) == maxPos {
				panic(usageError("unexpected argument"))
			}
			c.pos = append(c.pos, a)
		}
	}
	return c
}

func load(name string, v any) {
	b, err := data.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("sampleloom: data/%s: %v", name, err))
	}
}

// emit prints v as indented JSON, as loom --json does, or a line of text
// per row without --json.
func (r *run) emit(c cmdline, v any, code int) int {
	if !c.flags["--json"] {
		fmt.Fprintln(r.stdout, "Loom (sample). Pass --json for machine-readable output.")
		return code
	}
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	var out bytes.Buffer
	json.Indent(&out, b, "", "  ")
	out.WriteByte('\n')
	r.stdout.Write(out.Bytes())
	return code
}

// refuse prints loom's ok:false envelope.
func (r *run) refuse(c cmdline, code, message string, exit int) int {
	return r.emit(c, ordered{{"ok", false}, {"code", code}, {"message", message}}, exit)
}

// marshal is json.Marshal without HTML escaping, as loom (Python) writes.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ordered is a JSON object that keeps its member order.
type ordered []struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(m.k)
		v, err := marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// withIfc appends the row's ifc member, as written, when it has one.
func withIfc(o ordered, ifc json.RawMessage) ordered {
	if len(ifc) > 0 {
		o = append(o, struct {
			k string
			v any
		}{"ifc", ifc})
	}
	return o
}

// ---- search ----

type hit struct {
	ID      string   `json:"id"`
	Source  string   `json:"source"`
	Title   string   `json:"title"`
	Snippet string   `json:"snippet"`
	Date    string   `json:"date"`
	People  []string `json:"people"`
	Score   float64  `json:"score"`
	raw     json.RawMessage
}

func (r *run) search(c cmdline) int {
	var d struct {
		Sources []string          `json:"sources"`
		Hits    []json.RawMessage `json:"hits"`
	}
	load("search.json", &d)
	query := ""
	if len(c.pos) > 0 {
		query = c.pos[0]
	}
	person, hasPerson := c.val("--person")
	if query == "" && !hasPerson {
		panic(usageError("search: give a query or --person"))
	}
	var personID string
	if hasPerson {
		ps := lookupPeople(person)
		switch {
		case len(ps) == 0 || ps[0].group:
			fmt.Fprintln(r.stdout, "No person matches that lookup.")
			return 1
		case len(ps) > 1:
			fmt.Fprintf(r.stdout, "%d people match that lookup; be more specific.\n", len(ps))
			return 3
		}
		personID = ps[0].ID
	}

	sourceStatus := ordered{}
	wanted := d.Sources
	if v, ok := c.val("--sources"); ok {
		wanted = nil
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "restricted" {
				return r.refuse(c, "source_not_permitted", "that source is not served to this dispatch", 2)
			}
			wanted = append(wanted, s)
		}
	}
	for _, s := range wanted {
		status := "ok"
		if !slices.Contains(d.Sources, s) {
			status = "unknown_source"
		}
		sourceStatus = append(sourceStatus, struct {
			k string
			v any
		}{s, status})
	}

	var warnings []string
	since, until := dateFlag(c, "--since", &warnings), dateFlag(c, "--until", &warnings)
	terms := strings.Fields(strings.ToLower(query))
	var hits []hit
	for _, raw := range d.Hits {
		var h hit
		if err := json.Unmarshal(raw, &h); err != nil {
			panic(err)
		}
		h.raw = raw
		text := strings.ToLower(h.Title + " " + h.Snippet)
		switch {
		case !slices.Contains(wanted, h.Source):
		case since != "" && h.Date < since, until != "" && h.Date > until:
		case personID != "" && !slices.Contains(h.People, personID):
		case len(terms) > 0 && !slices.ContainsFunc(terms, func(t string) bool { return strings.Contains(text, t) }):
		default:
			hits = append(hits, h)
		}
	}
	rank, _ := c.val("--rank")
	switch rank {
	case "", "score":
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	case "recency":
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Date > hits[j].Date })
	default:
		panic(usageError("--rank: want recency or score"))
	}
	truncated := false
	if v, ok := c.val("--limit"); ok {
		n := positive(v, "--limit")
		if len(hits) > n {
			hits, truncated = hits[:n], true
		}
	}
	rows := make([]json.RawMessage, len(hits))
	for i, h := range hits {
		rows[i] = h.raw
	}
	if warnings == nil {
		warnings = []string{}
	}
	tz, _ := c.val("--tz")
	schema := 1
	if strings.Contains(query, "schema-v2") {
		schema = 2 // lets the demo show schema_version_mismatch
	}
	return r.emit(c, ordered{
		{"schemaVersion", schema},
		{"query", query},
		{"filters", ordered{{"person", personID}, {"since", since}, {"until", until}, {"tz", tz}}},
		{"source_status", sourceStatus},
		{"warnings", warnings},
		{"truncated", truncated},
		{"hits", rows},
	}, 0)
}

// dateFlag returns the flag's value when it is a YYYY-MM-DD date; other
// values are ignored with a warning, as loom does for free-form ranges.
func dateFlag(c cmdline, name string, warnings *[]string) string {
	v, ok := c.val(name)
	if !ok {
		return ""
	}
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		*warnings = append(*warnings, strings.TrimPrefix(name, "--")+" is not a date the sample understands; ignored")
		return ""
	}
	return v
}

func positive(v, name string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		panic(usageError(name + ": want a positive integer"))
	}
	return n
}

// ---- pages ----

type page struct {
	Path      string            `json:"path"`
	Kind      string            `json:"kind"`
	Title     string            `json:"title"`
	Summary   string            `json:"summary"`
	Updated   string            `json:"updated"`
	Ifc       json.RawMessage   `json:"ifc"`
	Context   json.RawMessage   `json:"context"`
	Documents map[string]string `json:"documents"`
	Source    string            `json:"source"`
}

type pageData struct {
	TotalPages   int    `json:"totalPages"`
	OmittedViews int    `json:"omittedViews"`
	Pages        []page `json:"pages"`
}

func (r *run) discover(c cmdline) int {
	var d pageData
	load("pages.json", &d)
	kind, _ := c.val("--kind")
	switch kind {
	case "", "all":
		kind = ""
	case "project", "projects":
		kind = "project"
	case "entity", "entities":
		kind = "entity"
	default:
		panic(usageError("--kind: want all, project(s) or entity(ies)"))
	}
	var rows []ordered
	for _, p := range d.Pages {
		if kind == "" || p.Kind == kind {
			rows = append(rows, withIfc(ordered{{"path", p.Path}, {"kind", p.Kind}, {"title", p.Title}, {"summary", p.Summary}, {"updated", p.Updated}}, p.Ifc))
		}
	}
	if v, ok := c.val("--limit"); ok {
		if n := positive(v, "--limit"); len(rows) > n {
			rows = rows[:n]
		}
	}
	if rows == nil {
		rows = []ordered{}
	}
	return r.emit(c, ordered{
		{"ok", true},
		{"concise", c.flags["--concise"]},
		{"totalPages", d.TotalPages},
		{"omittedViews", d.OmittedViews},
		{"pages", rows},
	}, 0)
}

func (r *run) page(c cmdline, read bool) int {
	if len(c.pos) == 0 {
		panic(usageError("page: want a target"))
	}
	target := c.pos[0]
	var d pageData
	load("pages.json", &d)
	for _, p := range d.Pages {
		if text, ok := p.Documents[target]; ok && read {
			return r.emit(c, withIfc(ordered{{"ok", true}, {"path", target}, {"page", p.Path}, {"kind", "document"}, {"format", "markdown"}, {"text", text}}, p.Ifc), 0)
		}
		if p.Path != target {
			continue
		}
		if read {
			return r.emit(c, withIfc(ordered{{"ok", true}, {"path", p.Path}, {"kind", "page"}, {"format", "markdown"}, {"text", p.Source}}, p.Ifc), 0)
		}
		return r.emit(c, withIfc(ordered{{"ok", true}, {"path", p.Path}, {"kind", p.Kind}, {"title", p.Title}, {"summary", p.Summary}, {"updated", p.Updated}, {"concise", c.flags["--concise"]}, {"context", p.Context}}, p.Ifc), 0)
	}
	return r.refuse(c, "page_not_found", "no Page or Document at that path", 1)
}

// ---- people ----

type person struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Path         string          `json:"path"`
	Handles      []string        `json:"handles"`
	Emails       []string        `json:"emails"`
	Phones       []string        `json:"phones"`
	Title        string          `json:"title"`
	Organization string          `json:"organization"`
	Groups       []string        `json:"groups"`
	Notes        string          `json:"notes"`
	Members      []string        `json:"members"`
	Ifc          json.RawMessage `json:"ifc"`
	group        bool
}

// lookupPeople resolves a lookup the way loom people does: person: and
// group: ids, handle:, an email, a People/<Name>/about.md path, or a phone
// number compared by its digits.
func lookupPeople(q string) []person {
	var d struct {
		People []person `json:"people"`
		Groups []person `json:"groups"`
	}
	load("people.json", &d)
	if strings.HasPrefix(q, "group:") {
		for _, g := range d.Groups {
			if g.ID == q {
				g.group = true
				return []person{g}
			}
		}
		return nil
	}
	digits := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
	}
	var out []person
	for _, p := range d.People {
		match := false
		switch {
		case strings.HasPrefix(q, "person:"):
			match = p.ID == q
		case strings.HasPrefix(q, "handle:"):
			match = slices.Contains(p.Handles, q)
		case strings.Contains(q, "@"):
			match = slices.ContainsFunc(p.Emails, func(e string) bool { return strings.EqualFold(e, q) })
		case strings.Contains(q, "/"):
			match = p.Path == q
		default:
			qd := digits(q)
			match = len(qd) >= 5 && slices.ContainsFunc(p.Phones, func(ph string) bool { return strings.HasSuffix(digits(ph), qd) })
		}
		if match {
			out = append(out, p)
		}
	}
	return out
}

func (r *run) people(c cmdline) int {
	if len(c.pos) == 0 {
		panic(usageError("people: want a lookup"))
	}
	shape, _ := c.val("--shape")
	if shape != "" && shape != "summary" && shape != "card" {
		panic(usageError("--shape: want summary or card"))
	}
	ps := lookupPeople(c.pos[0])
	switch {
	case len(ps) == 0:
		fmt.Fprintln(r.stdout, "No person matches that lookup.")
		return 1
	case len(ps) > 1:
		fmt.Fprintf(r.stdout, "%d people match that lookup; be more specific.\n", len(ps))
		return 3
	}
	p := ps[0]
	if p.group {
		return r.emit(c, withIfc(ordered{{"id", p.ID}, {"kind", "group"}, {"name", p.Name}, {"members", p.Members}}, p.Ifc), 0)
	}
	if shape == "summary" {
		return r.emit(c, withIfc(ordered{{"id", p.ID}, {"kind", "person"}, {"name", p.Name}, {"title", p.Title}, {"organization", p.Organization}}, p.Ifc), 0)
	}
	return r.emit(c, withIfc(ordered{
		{"id", p.ID}, {"kind", "person"}, {"name", p.Name}, {"path", p.Path},
		{"handles", p.Handles}, {"emails", p.Emails}, {"phones", p.Phones},
		{"title", p.Title}, {"organization", p.Organization}, {"groups", p.Groups}, {"notes", p.Notes},
	}, p.Ifc), 0)
}

// ---- calendar ----

func (r *run) calendar(c cmdline) int {
	var d struct {
		Today  string            `json:"today"`
		Events []json.RawMessage `json:"events"`
	}
	load("calendar.json", &d)
	from, hasFrom := c.val("--from")
	to, hasTo := c.val("--to")
	if c.flags["--all"] && (hasFrom || hasTo) {
		panic(usageError("--all cannot be combined with --from or --to"))
	}
	for _, v := range []string{from, to} {
		if _, err := time.Parse(time.DateOnly, v); v != "" && err != nil {
			panic(usageError("dates are YYYY-MM-DD"))
		}
	}
	if !c.flags["--all"] && !hasFrom && !hasTo {
		today, _ := time.Parse(time.DateOnly, d.Today)
		from, to = d.Today, today.AddDate(0, 0, 90).Format(time.DateOnly)
	}
	rows := []json.RawMessage{}
	for _, raw := range d.Events {
		var e struct {
			Start string `json:"start"`
		}
		json.Unmarshal(raw, &e)
		day := e.Start[:10]
		if from != "" && day < from || to != "" && day > to {
			continue
		}
		rows = append(rows, raw)
	}
	return r.emit(c, rows, 0)
}

// ---- context ----

func (r *run) context(c cmdline) int {
	if len(c.pos) == 0 {
		panic(usageError("context: want where, activity or hosted"))
	}
	var d map[string]json.RawMessage
	load("context.json", &d)
	at, hasAt := c.val("--at")
	since, hasSince := c.val("--since")
	until, hasUntil := c.val("--until")
	var row json.RawMessage
	switch c.pos[0] {
	case "where":
		if hasSince || hasUntil {
			panic(usageError("context where takes no --since/--until"))
		}
		row = d["where"]
		if hasAt {
			row = fill(d["whereAt"], `"at":""`, `"at":`, at)
		}
	case "activity":
		row = d["activity"]
		if hasSince || hasUntil {
			row = fill(d["activityRange"], `"since":""`, `"since":`, since)
			row = fill(row, `"until":""`, `"until":`, until)
		}
	case "hosted":
		return r.refuse(c, "not_available", "hosted context is not served by the sample", 2)
	default:
		panic(usageError("context: want where, activity or hosted"))
	}
	var out bytes.Buffer
	json.Compact(&out, row)
	return r.emit(c, json.RawMessage(out.Bytes()), 0)
}

// fill replaces the empty member placeholder in raw with name and value.
func fill(raw json.RawMessage, placeholder, name, value string) json.RawMessage {
	var compact bytes.Buffer
	json.Compact(&compact, raw)
	v, _ := marshal(value)
	return bytes.Replace(compact.Bytes(), []byte(placeholder), append([]byte(name), v...), 1)
}

// ---- profile ----

// profile answers from the resolver tier, or with --fresh from the fallback
// tier (exit 1, hasProfile:false). A direct transport whose run id names
// another variant ("sample-health", "sample-unreadable") gets that one.
func (r *run) profile(c cmdline) int {
	var d map[string]json.RawMessage
	load("profile.json", &d)
	if c.flags["--fresh"] {
		return r.emit(c, d["fresh"], 1)
	}
	variant := "default"
	if id := r.env["LOOM_DISPATCH_ID"]; id != "fresh" && d[id] != nil {
		variant = id
	}
	return r.emit(c, d[variant], 0)
}
