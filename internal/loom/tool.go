package loom

// Tool is one of the eight retrieval tool ids, as they appear in routes and
// output ids ("loom_search" ... "loom_profile"). The zero value is not a
// tool.
type Tool string

// The eight retrieval tools.
const (
	Search       Tool = "loom_search"
	PageDiscover Tool = "loom_page_discover"
	PageInspect  Tool = "loom_page_inspect"
	PageRead     Tool = "loom_page_read"
	People       Tool = "loom_people"
	CalendarList Tool = "loom_calendar_list"
	Context      Tool = "loom_context"
	Profile      Tool = "loom_profile"
)

// Tools lists the eight tools in registration order (SEMANTICS (c),
// "Descriptors"). Callers must not modify it.
var Tools = []Tool{Search, PageDiscover, PageInspect, PageRead, People, CalendarList, Context, Profile}

// Command returns the loom command name the result carries as "kind":
// "search", "page.discover", "page.inspect", "page.read", "people",
// "calendar.list", "context" or "profile"; "" for a value that is not a tool.
func (t Tool) Command() string {
	switch t {
	case Search:
		return "search"
	case PageDiscover:
		return "page.discover"
	case PageInspect:
		return "page.inspect"
	case PageRead:
		return "page.read"
	case People:
		return "people"
	case CalendarList:
		return "calendar.list"
	case Context:
		return "context"
	case Profile:
		return "profile"
	}
	return ""
}

// Valid reports whether t is one of the eight tools.
func (t Tool) Valid() bool { return t.Command() != "" }

// ParseTool returns the tool whose id is s, and false when s names none.
// Matching is exact (case-sensitive, no trimming).
func ParseTool(s string) (Tool, bool) {
	t := Tool(s)
	return t, t.Valid()
}

// Shape is the shape of a tool's payload (SEMANTICS (d)), declared here
// once for every reading of it: an object whose List member is an array
// of rows beside the Envelope keys (Search, PageDiscover); an array of
// rows (Array: CalendarList); else an object that is the one row.
type Shape struct {
	List     string
	Envelope []string
	Array    bool
}

// maxEnvelopeKeys bounds the Envelope keys of a Shape.
const maxEnvelopeKeys = 4

// ShapeOf returns tool's payload shape.
func ShapeOf(tool Tool) Shape {
	switch tool {
	case Search:
		return Shape{List: "hits", Envelope: []string{"query", "source_status", "warnings", "truncated"}}
	case PageDiscover:
		return Shape{List: "pages", Envelope: []string{"totalPages", "omittedViews"}}
	case CalendarList:
		return Shape{Array: true}
	}
	return Shape{}
}
