// Command fakeloom stands in for the loom CLI in the end-to-end tests.
//
// The gateway runs it with a cleared environment; with the direct transport
// LOOM_INSTANCE_DIR names the scenario directory that drives it:
//
//   - every invocation appends one JSON line {"argv", "env", "key", "case"}
//     to DIR/calls.jsonl before doing anything else (env is its whole
//     environment: TRACEPARENT is in it when the gateway traces);
//   - the behaviour is read from DIR/case-NAME.json when some argv element
//     contains "case=NAME" (NAME of [a-z0-9-]), else from DIR/KEY.json,
//     KEY being the loom command ("search", "page.read", "calendar.list",
//     ...), else DIR/default.json; with none of them it exits 99.
//
// A behaviour file is a Behaviour as JSON. Steps run in this order:
// grandchild, spawn, stderr, stdout (stdout, then stdoutFile, then
// stdoutBytes filler), sleep, signal, exit.
//
// Every pid it writes is the pid /proc shows (/proc/self), which is the
// gateway's view even when the gateway runs it in a PID namespace.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loom-gateway/gateway/tests/fakeloom/scenario"
)

// Behaviour and Record are the scenario's types, shared with the tests
// that write behaviours and read records.
type (
	Behaviour = scenario.Behaviour
	Record    = scenario.Record
)

const (
	grandchildArg = "__fakeloom_grandchild__"
	spawnArg      = "__fakeloom_spawn__"
)

var caseRE = regexp.MustCompile(`case=([a-z0-9-]+)`)

func main() {
	if len(os.Args) == 4 && os.Args[1] == grandchildArg {
		grandchild(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) == 4 && os.Args[1] == spawnArg {
		os.Exit(spawned(os.Args[2], os.Args[3]))
	}
	dir := os.Getenv("LOOM_INSTANCE_DIR")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "fakeloom: LOOM_INSTANCE_DIR is not set")
		os.Exit(98)
	}
	key := commandKey(os.Args[1:])
	name := ""
	for _, a := range os.Args[1:] {
		if m := caseRE.FindStringSubmatch(a); m != nil {
			name = m[1]
			break
		}
	}
	record(dir, Record{Argv: os.Args, Env: os.Environ(), Key: key, Case: name})

	b, ok := load(dir, name, key)
	if !ok {
		fmt.Fprintln(os.Stderr, "fakeloom: no behaviour for", key, name)
		os.Exit(99)
	}
	pidName := "grandchild-" + key + ".pid"
	if name != "" {
		pidName = "grandchild-" + name + ".pid"
	}
	os.Exit(act(dir, pidName, b))
}

// hostPid is this process's pid as the test suite sees it: told by the
// suite's pid server (a file named pid-server in a directory above
// LOOM_INSTANCE_DIR names its abstract unix socket; it answers with the
// pid SO_PEERCRED gives it, in its own PID namespace), since in a PID
// namespace with a /proc of its own the fake cannot read it from /proc;
// else the pid /proc shows.
func hostPid() int {
	if pid := askPidServer(os.Getenv("LOOM_INSTANCE_DIR")); pid > 0 {
		return pid
	}
	s, err := os.Readlink("/proc/self")
	if err != nil {
		return os.Getpid()
	}
	pid, err := strconv.Atoi(s)
	if err != nil {
		return os.Getpid()
	}
	return pid
}

// askPidServer asks the pid server named in a pid-server file in dir or
// a directory above it for this process's pid; 0 when there is none.
func askPidServer(dir string) int {
	for i := 0; dir != "" && i < 4; i, dir = i+1, filepath.Dir(dir) {
		name, err := os.ReadFile(filepath.Join(dir, "pid-server"))
		if err != nil {
			continue
		}
		c, err := net.Dial("unix", "@"+strings.TrimSpace(string(name)))
		if err != nil {
			return 0
		}
		b, _ := io.ReadAll(c)
		c.Close()
		pid, _ := strconv.Atoi(string(b))
		return pid
	}
	return 0
}

// commandKey is the loom command of args: "page.read" for "page read ...".
func commandKey(args []string) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "page", "calendar":
		if len(args) > 1 {
			return args[0] + "." + args[1]
		}
	}
	return args[0]
}

func record(dir string, r Record) {
	line, err := json.Marshal(r)
	if err != nil {
		os.Exit(97)
	}
	f, err := os.OpenFile(filepath.Join(dir, "calls.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		os.Exit(97)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		os.Exit(97)
	}
	_ = f.Close()
}

func load(dir, name, key string) (Behaviour, bool) {
	var files []string
	if name != "" {
		files = append(files, "case-"+name+".json")
	}
	files = append(files, key+".json", "default.json")
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		var b Behaviour
		if err := json.Unmarshal(data, &b); err != nil {
			fmt.Fprintln(os.Stderr, "fakeloom: bad behaviour file", f)
			os.Exit(96)
		}
		return b, true
	}
	return Behaviour{}, false
}

func act(dir, pidName string, b Behaviour) int {
	if b.ProcProbe {
		procProbe(dir, strings.Replace(strings.TrimSuffix(pidName, ".pid"), "grandchild-", "procprobe-", 1)+".json")
	}
	if b.LeaderPid {
		leader := filepath.Join(dir, strings.Replace(pidName, "grandchild-", "leader-", 1))
		_ = os.WriteFile(leader, []byte(strconv.Itoa(hostPid())), 0o600)
	}
	if b.Grandchild != "" {
		exe, err := os.Executable()
		if err != nil {
			return 94
		}
		cmd := exec.Command(exe, grandchildArg, filepath.Join(dir, pidName), b.Grandchild)
		cmd.Stdout = os.Stdout // holds the gateway's pipe open
		if err := cmd.Start(); err != nil {
			return 94
		}
		// Not waited for: the grandchild outlives this process. Its pid
		// file is, so that a test can look for it even when the gateway
		// kills loom's group as soon as this process exits.
		pidFile := filepath.Join(dir, pidName)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				break
			}
		}
	}
	for _, shape := range b.Spawn {
		pidFile := filepath.Join(dir, strings.Replace(pidName, "grandchild-", "spawn-", 1))
		pidFile = strings.TrimSuffix(pidFile, ".pid") + "-" + shape + ".pid"
		if code := spawn(shape, pidFile); code != 0 {
			return code
		}
	}
	if b.Stderr != "" {
		_, _ = os.Stderr.WriteString(b.Stderr)
	}
	if b.StderrBytes > 0 || b.StderrMarker != "" {
		writeStderr(b.StderrBytes, b.StderrMarker)
	}
	out := os.Stdout
	if b.Stdout != "" {
		_, _ = out.WriteString(b.Stdout)
	}
	if b.StdoutFile != "" {
		data, err := os.ReadFile(filepath.Join(dir, b.StdoutFile))
		if err != nil {
			return 95
		}
		_, _ = out.Write(data)
	}
	if b.StdoutBytes > 0 {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for left := b.StdoutBytes; left > 0; {
			n := min(left, int64(len(chunk)))
			if _, err := out.Write(chunk[:n]); err != nil {
				break // the reader went away (the cap was hit)
			}
			left -= n
		}
	}
	if b.Sleep != "" {
		d, err := time.ParseDuration(b.Sleep)
		if err != nil {
			return 93
		}
		time.Sleep(d)
	}
	if b.Signal != "" {
		sig := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "SEGV": syscall.SIGSEGV, "ABRT": syscall.SIGABRT}[b.Signal]
		if sig == 0 {
			return 92
		}
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(10 * time.Second) // the signal arrives meanwhile
		return 91
	}
	return b.Exit
}

// writeStderr writes n bytes to stderr with marker planted through them.
func writeStderr(n int64, marker string) {
	filler := strings.Repeat("e", 64<<10)
	w := os.Stderr
	_, _ = w.WriteString(marker)
	for left := n; left > 0; {
		k := min(left, int64(len(filler)))
		if _, err := w.WriteString(filler[:k]); err != nil {
			return
		}
		_, _ = w.WriteString(marker)
		left -= k
	}
}

// grandchild records its pid in pidFile and holds the inherited stdout
// open.
func grandchild(pidFile, hold string) {
	d, err := time.ParseDuration(hold)
	if err != nil {
		os.Exit(90)
	}
	writePid(pidFile)
	time.Sleep(d)
}

// writePid writes this process's pid to pidFile, atomically.
func writePid(pidFile string) {
	_ = os.WriteFile(pidFile+".tmp", []byte(strconv.Itoa(hostPid())), 0o600)
	_ = os.Rename(pidFile+".tmp", pidFile)
}

// spawn starts a process of shape that records its pid in pidFile, and
// waits for the record.
func spawn(shape, pidFile string) int {
	exe, err := os.Executable()
	if err != nil {
		return 94
	}
	mode := shape
	switch shape {
	case "setsid":
		mode = "child"
	case "setsid-exit":
		mode = "child-exit"
	}
	cmd := exec.Command(exe, spawnArg, mode, pidFile)
	if shape == "setsid" || shape == "setsid-exit" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return 94
	}
	if shape == "double-fork" {
		_ = cmd.Wait() // its child is orphaned
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			return 0
		}
	}
	return 94
}

// spawned is a process spawn started: mode "double-fork" starts a "child"
// and exits; "child" and "ignore-term" record their pid and sleep.
func spawned(mode, pidFile string) int {
	switch mode {
	case "double-fork":
		exe, err := os.Executable()
		if err != nil {
			return 94
		}
		if err := exec.Command(exe, spawnArg, "child", pidFile).Start(); err != nil {
			return 94
		}
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "child":
	case "child-exit":
		writePid(pidFile)
		time.Sleep(200 * time.Millisecond)
		return 0
	default:
		return 94
	}
	writePid(pidFile)
	time.Sleep(2 * time.Minute)
	return 0
}

// procProbe writes to dir/file what this process can see of other
// processes through /proc (scenario.ProcProbe): the pids listed, those
// whose environ or cmdline it could read and whether one held marker
// (gatewayMarker), and what reading the environ of the pid in
// dir/gateway.pid (the gateway's, as the test sees it) gave.
func procProbe(dir, file string) {
	var p scenario.ProcProbe
	self, _ := os.Readlink("/proc/self")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p.Pids = append(p.Pids, pid)
		if e.Name() == self {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile("/proc/" + e.Name() + "/" + f)
			if err != nil || len(b) == 0 {
				continue
			}
			p.Readable = append(p.Readable, e.Name()+"/"+f)
			if strings.Contains(string(b), gatewayMarker) {
				p.Marker = append(p.Marker, e.Name()+"/"+f)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "gateway.pid")); err == nil {
		gw := strings.TrimSpace(string(b))
		env, err := os.ReadFile("/proc/" + gw + "/environ")
		switch {
		case err != nil:
			p.GatewayEnviron = "error"
		case strings.Contains(string(env), gatewayMarker):
			p.GatewayEnviron = "marker"
		default:
			p.GatewayEnviron = "read"
		}
	}
	out, _ := json.Marshal(p)
	_ = os.WriteFile(filepath.Join(dir, file+".tmp"), out, 0o600)
	_ = os.Rename(filepath.Join(dir, file+".tmp"), filepath.Join(dir, file))
}

// gatewayMarker is in the test gateway's environment and never in loom's.
const gatewayMarker = "E2E_GATEWAY_SECRET=not-for-loom"
