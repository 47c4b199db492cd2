package reaper

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary plays every part, chosen by roleEnv: the reaper (Run),
// the gateway under it (which starts looms with os/exec and checks their
// exit statuses), a loom (which leaves a child in a session of its own,
// then exits with the code it is given), and that child (which outlives
// loom, says who its parent is, and exits).
const (
	roleEnv  = "REAPER_TEST_ROLE"
	codeEnv  = "REAPER_TEST_CODE"
	dirEnv   = "REAPER_TEST_DIR"
	calls    = 20
	parallel = 4
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "reaper":
		if os.Getenv("REAPER_TEST_UNDER_REAPER") != "" {
			os.Exit(97) // never a reaper under a reaper
		}
		exe, _ := os.Executable()
		path := exe
		if os.Getenv("REAPER_TEST_GATEWAY") == "missing" {
			path = "/nonexistent/loom-gateway"
		}
		env := []string{"REAPER_TEST_UNDER_REAPER=1", roleEnv + "=" + os.Getenv("REAPER_TEST_GATEWAY")}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, roleEnv+"=") {
				env = append(env, kv)
			}
		}
		os.Exit(Run(path, []string{exe}, env))
	case "gateway":
		os.Exit(gateway())
	case "term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		os.Exit(3)
	case "loom":
		os.Exit(loom())
	case "orphan":
		// It waits for its loom to exit, then exits itself a moment later,
		// while other looms run.
		loomPid := strconv.Itoa(os.Getppid())
		if p := os.Getenv("REAPER_TEST_LOOM"); p != "" {
			loomPid = p
		}
		for deadline := time.Now().Add(5 * time.Second); strconv.Itoa(os.Getppid()) == loomPid && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		f := filepath.Join(os.Getenv(dirEnv), strconv.Itoa(os.Getpid()))
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getppid())), 0o600)
		os.Exit(0)
	}
	os.Exit(99)
}

// report is what the gateway part found.
type report struct {
	Calls      int      // looms waited for
	Wrong      []string // exit statuses not the loom's own
	Zombies    []int    // the reaper's children left zombies
	Reparented int      // orphans whose parent was the reaper when they exited
	Orphans    int      // orphans that reported at all
}

func gateway() int {
	exe, _ := os.Executable()
	dir := os.Getenv(dirEnv)
	var (
		mu  sync.Mutex
		rep report
		wg  sync.WaitGroup
		sem = make(chan struct{}, parallel)
	)
	for i := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			want := 10 + i
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), roleEnv+"=loom", codeEnv+"="+strconv.Itoa(want))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			err := cmd.Run()
			mu.Lock()
			defer mu.Unlock()
			rep.Calls++
			if got := cmd.ProcessState; got == nil || got.ExitCode() != want {
				rep.Wrong = append(rep.Wrong, fmt.Sprintf("loom %d: %v (%v)", want, got, err))
			}
		}()
	}
	wg.Wait()
	// Every orphan exits at most 20 ms after its loom.
	time.Sleep(300 * time.Millisecond)
	reaper := os.Getppid()
	rep.Zombies = zombiesOf(reaper)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		rep.Orphans++
		if string(b) == strconv.Itoa(reaper) {
			rep.Reparented++
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return 7
}

func loom() int {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=orphan", "REAPER_TEST_LOOM="+strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 98
	}
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	code, _ := strconv.Atoi(os.Getenv(codeEnv))
	return code
}

// zombiesOf returns the pids of the zombies whose parent is ppid.
func zombiesOf(ppid int) []int {
	var z []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(ppid) {
			z = append(z, pid)
		}
	}
	return z
}

// TestRunReapsWithoutStealing: under Run, the gateway's looms exit with
// their own codes while the children they left in sessions of their own
// exit around them, re-parented to the reaper, which leaves none of them a
// zombie; Run returns the gateway's exit code.
func TestRunReapsWithoutStealing(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=reaper", "REAPER_TEST_GATEWAY=gateway", dirEnv+"="+t.TempDir())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("reaper: %v, want the gateway's exit code 7; output %s", err, out)
	}
	var rep report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("gateway's report %q: %v", out, err)
	}
	if rep.Calls != calls || len(rep.Wrong) > 0 {
		t.Errorf("%d looms waited for, exit statuses not their own: %q", rep.Calls, rep.Wrong)
	}
	if rep.Orphans != calls || rep.Reparented != calls {
		t.Errorf("%d of %d orphans reported, %d of them re-parented to the reaper: want all", rep.Orphans, calls, rep.Reparented)
	}
	if len(rep.Zombies) > 0 {
		t.Errorf("zombies left under the reaper: %v", rep.Zombies)
	}
}

// TestRunForwardsSignals: a SIGTERM to the reaper reaches the gateway,
// whose exit code Run returns.
func TestRunForwardsSignals(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=reaper", "REAPER_TEST_GATEWAY=term")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("gateway: %q %v", buf, err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the reaper did not end after SIGTERM")
	}
	if got := cmd.ProcessState.ExitCode(); got != 3 {
		t.Errorf("reaper exit code %d after SIGTERM, want the gateway's 3", got)
	}
}

// TestRunCannotStart: a gateway that cannot be started gives 127.
func TestRunCannotStart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"=reaper", "REAPER_TEST_GATEWAY=missing")
	_ = cmd.Run()
	if got := cmd.ProcessState.ExitCode(); got != 127 {
		t.Errorf("Run of a missing executable = %d, want 127", got)
	}
}
