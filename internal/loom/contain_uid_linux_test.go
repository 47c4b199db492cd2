package loom

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// cinitCapsMode is the test binary's mode (fakeModeVar) in which, run as
// a user that is not root, it starts the C init with a /proc of its own
// in a user namespace, as a gateway under the shipped systemd unit does
// (the unit refuses clone3, so the inline init is not there), and has it
// run a shell that prints what loom would hold: its capabilities and the
// processes its /proc lists.
const cinitCapsMode = "cinit-caps"

// cinitCaps is cinitCapsMode's main.
func cinitCaps() int {
	init, err := nsinit.Executable()
	if err != nil {
		fmt.Println("no C init:", err)
		return 2
	}
	c := Containment{Init: init, UserNS: true, Proc: true}
	if err := probe(c); err != nil {
		fmt.Printf("probe of %s as uid %d: %v\n", c, os.Getuid(), err)
		return 1
	}
	cmd := exec.Command(init, "/bin/sh", "-c", `grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status; echo "pids: $(ls /proc | grep -c '^[0-9]')"`)
	cmd.Args[0] = initName(c)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = sysProcAttr(c)
	out, err := cmd.CombinedOutput()
	os.Stdout.Write(out)
	if err != nil {
		fmt.Println("run:", err)
		return 1
	}
	return 0
}

// TestCInitProcAsNonRoot: a gateway that is not root (the systemd unit's
// DynamicUser=) and starts loom with the C init gets loom a /proc of its
// own (the init keeps CAP_SYS_ADMIN in loom's user namespace across its
// exec, as an ambient capability), and loom holds no capability at all, not
// even an inheritable one.
// Without the ambient capability the init's mount fails and the probe
// says so.
func TestCInitProcAsNonRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run the test binary as another user")
	}
	if _, err := nsinit.Executable(); err != nil {
		t.Skipf("no C init on this platform: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary where uid 4242 can run it.
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "loom.test")
	copyFile(t, self, bin)
	cmd := exec.Command(bin)
	cmd.Env = []string{fakeModeVar + "=" + cinitCapsMode, "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 4242, Gid: 4242}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 4242: %v\n%s", err, out)
	}
	text := string(out)
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		m := regexp.MustCompile(`(?m)^` + set + `:\s*([0-9a-f]+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in loom's status:\n%s", set, text)
		}
		if v, _ := strconv.ParseUint(m[1], 16, 64); v != 0 {
			t.Errorf("loom holds capabilities: %s %s\n%s", set, m[1], text)
		}
	}
	m := regexp.MustCompile(`pids: (\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no process count:\n%s", text)
	}
	// The init, the shell, its subshell, ls and grep: loom's own /proc,
	// not the host's.
	if n, _ := strconv.Atoi(m[1]); n > 6 {
		t.Errorf("loom's /proc lists %d processes: the host's, not its own:\n%s", n, strings.TrimSpace(text))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
