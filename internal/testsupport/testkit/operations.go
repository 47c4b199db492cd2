package testkit

// Operation is an agent operation and an input it accepts.
type Operation struct {
	Name, Input string
}

// Outputs are the agent operations that take an output number (the eight
// tools and describe_handle), each with an input the sample loom answers;
// the result writer takes none.
var Outputs = []Operation{
	{"loom_search", `{"query":"atlas"}`},
	{"loom_page_discover", `{}`},
	{"loom_page_inspect", `{"target":"Projects/Atlas"}`},
	{"loom_page_read", `{"target":"Projects/Atlas"}`},
	{"loom_people", `{"query":"ada@example.com"}`},
	{"loom_calendar_list", `{"all":true}`},
	{"loom_context", `{"read":"where"}`},
	{"loom_profile", `{}`},
	{"describe_handle", `{"token":"cfh:v:22222"}`},
}
