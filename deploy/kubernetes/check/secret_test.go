package check

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// gateway builds the gateway of this checkout once, into a directory
// every user may read (the Secret test runs it as the pod's uid).
func gateway(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "loom-gateway-k8s-check-")
		if buildErr != nil {
			return
		}
		if buildErr = os.Chmod(buildDir, 0o755); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "gateway"), "./cmd/gateway")
		cmd.Dir = filepath.Join("..", "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/gateway: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "gateway")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// secretVolume lays out dir as the kubelet lays out a Secret volume with
// one key: the key a symlink to ..data/key, ..data a symlink to a
// timestamped directory holding the file; owned by root, group fsGroup,
// the file mode defaultMode|0440 and the directories 0550|setgid (the
// kubelet's SetVolumeOwnership for a read-only volume with an fsGroup,
// kubernetes/kubernetes#57923, #81089). Returns the key's path.
func secretVolume(t *testing.T, dir, key, value string, defaultMode os.FileMode, fsGroup int) string {
	t.Helper()
	ts := "..2026_12_07_02_00_00.123456789"
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ts, key)
	if err := os.WriteFile(file, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(ts, filepath.Join(dir, "..data")))
	must(t, os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)))
	for _, p := range []string{dir, filepath.Join(dir, ts), file} {
		must(t, os.Lchown(p, 0, fsGroup))
	}
	for _, p := range []string{filepath.Join(dir, "..data"), filepath.Join(dir, key)} {
		must(t, os.Lchown(p, 0, fsGroup))
	}
	must(t, os.Chmod(file, defaultMode|0o440))
	must(t, os.Chmod(dir, 0o550|os.ModeSetgid))
	must(t, os.Chmod(filepath.Join(dir, ts), 0o550|os.ModeSetgid))
	return filepath.Join(dir, key)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startAs runs the gateway as uid:gid with the pod's fsGroup as its one
// supplementary group (as a container runtime does), on loopback ports,
// with the host token from tokenFile. It returns the host listener's URL,
// or the gateway's exit status and output when it did not start.
func startAs(t *testing.T, uid, gid, fsGroup int, tokenFile string) (url string, exit int, output string) {
	t.Helper()
	agent, host := freePort(t), freePort(t)
	cmd := exec.Command(gateway(t),
		fmt.Sprintf("--listen=127.0.0.1:%d", agent),
		fmt.Sprintf("--host-listen=127.0.0.1:%d", host),
		"--host-token-file="+tokenFile)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(fsGroup)}},
		Setpgid:    true,
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	done := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	var out strings.Builder
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				<-done
				return "", cmd.ProcessState.ExitCode(), out.String()
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "gateway listening") {
				return fmt.Sprintf("http://127.0.0.1:%d", host), 0, out.String()
			}
		case <-deadline:
			t.Fatalf("the gateway neither listened nor exited within 20 s:\n%s", out.String())
		}
	}
}

// TestSecretVolumeTokenAccepted: the host token as deployment.yaml gives
// it (a Secret volume, defaultMode 0440, fsGroup, the pod's non-root
// uid) is a file the gateway starts with and whose token opens the host
// API; the same file open to others is refused, naming the fix.
func TestSecretVolumeTokenAccepted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes files owned by root and runs the gateway as the pod's uid (scripts/unit-test.sh runs it as root)")
	}
	o := load(t)
	spec := o.deployment(t, "loom-gateway").Spec.Template.Spec
	uid, gid, fsGroup := int(*spec.SecurityContext.RunAsUser), int(*spec.SecurityContext.RunAsGroup), int(*spec.SecurityContext.FSGroup)
	var mode os.FileMode
	for _, v := range spec.Volumes {
		if v.Name == "token" && v.Secret != nil && v.Secret.DefaultMode != nil {
			mode = os.FileMode(*v.Secret.DefaultMode)
		}
	}
	if mode == 0 {
		t.Fatal("deployment.yaml has no Secret volume named token with a defaultMode")
	}

	root, err := os.MkdirTemp("", "loom-gateway-secret-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	must(t, os.Chmod(root, 0o755))
	token := "k8s-secret-host-token-0123456789abcdefghijklmnop"

	t.Run("as deployment.yaml gives it", func(t *testing.T) {
		file := secretVolume(t, filepath.Join(root, "token"), "host-token", token+"\n", mode, fsGroup)
		fi, err := os.Stat(file)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		t.Logf("the Secret's file: mode %04o, owner %d, group %d, through %s", fi.Mode().Perm(), st.Uid, st.Gid, "..data symlinks")
		url, exit, out := startAs(t, uid, gid, fsGroup, file)
		if url == "" {
			t.Fatalf("the gateway (uid %d, fsGroup %d) refused the Secret's token file: exit %d\n%s", uid, fsGroup, exit, out)
		}
		req, _ := http.NewRequest("GET", url+"/host/v1/runs", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /host/v1/runs with the Secret's token: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("open to others", func(t *testing.T) {
		file := secretVolume(t, filepath.Join(root, "open"), "host-token", token+"\n", 0o444, fsGroup)
		url, exit, out := startAs(t, uid, gid, fsGroup, file)
		if url != "" || exit != 2 || !strings.Contains(out, "chmod") {
			t.Fatalf("a world-readable token file: want exit 2 naming the chmod, got listening=%v exit %d\n%s", url != "", exit, out)
		}
	})
}
