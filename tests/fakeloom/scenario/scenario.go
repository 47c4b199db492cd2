// Package scenario holds the types of the fake loom's scenario directory
// (tests/fakeloom): the Behaviour a test writes for an invocation and the
// Record each invocation appends to calls.jsonl.
package scenario

// Behaviour is what one invocation does.
type Behaviour struct {
	// Stdout is printed verbatim.
	Stdout string `json:"stdout,omitempty"`
	// StdoutFile names a file in the scenario directory printed verbatim
	// after Stdout (for bytes a JSON string cannot hold).
	StdoutFile string `json:"stdoutFile,omitempty"`
	// StdoutBytes prints that many filler bytes ('x') after the above.
	StdoutBytes int64 `json:"stdoutBytes,omitempty"`
	// StderrBytes writes that many bytes to stderr, with StderrMarker at
	// the start, every 64 KiB and at the end.
	StderrBytes  int64  `json:"stderrBytes,omitempty"`
	StderrMarker string `json:"stderrMarker,omitempty"`
	// Stderr is written to stderr verbatim, before StderrBytes.
	Stderr string `json:"stderr,omitempty"`
	// Grandchild starts a grandchild that inherits stdout and holds it
	// open for this duration; its pid is written to
	// DIR/grandchild-NAME.pid (NAME the case, else the command key).
	Grandchild string `json:"grandchild,omitempty"`
	// Spawn starts one process of each shape named, each of which records
	// its pid in DIR/spawn-NAME-SHAPE.pid (NAME as for Grandchild) and
	// sleeps for two minutes without holding stdout: "child" (a plain
	// child), "double-fork" (a grandchild whose parent exits at once),
	// "setsid" (a child in a session of its own), "ignore-term" (a child
	// that ignores SIGTERM); and "setsid-exit", a child in a session of
	// its own that exits 200 ms after it has recorded its pid (it outlives
	// loom, and is re-parented to the namespace's init or the gateway's).
	Spawn []string `json:"spawn,omitempty"`
	// Sleep waits this long before the exit (a hang when long).
	Sleep string `json:"sleep,omitempty"`
	// LeaderPid writes this process's pid to DIR/leader-NAME.pid first.
	LeaderPid bool `json:"leaderPid,omitempty"`
	// Signal kills the process with this signal (KILL, TERM, SEGV, ABRT)
	// instead of exiting.
	Signal string `json:"signal,omitempty"`
	// Exit is the exit code.
	Exit int `json:"exit,omitempty"`
	// ProcProbe writes DIR/procprobe-NAME.json (NAME as for Grandchild),
	// a ProcProbe: what this process sees of others through /proc.
	ProcProbe bool `json:"procProbe,omitempty"`
}

// ProcProbe is what a fake loom saw of other processes through /proc.
type ProcProbe struct {
	// Pids are the pids /proc lists.
	Pids []int `json:"pids"`
	// Readable are the "PID/environ" and "PID/cmdline" files of other
	// processes it could read; Marker those holding the test gateway's
	// own environment variable.
	Readable []string `json:"readable"`
	Marker   []string `json:"marker"`
	// GatewayEnviron is what reading /proc/<the gateway's pid>/environ
	// gave: "error", "read" (without the marker) or "marker".
	GatewayEnviron string `json:"gatewayEnviron"`
}

// Record is one line of calls.jsonl: one invocation of the fake loom.
type Record struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Key  string   `json:"key"`
	Case string   `json:"case,omitempty"`
}
