package tests

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// The user and groups the gateway runs as in the token file tests: a
// non-root uid, as a Kubernetes pod's runAsUser or a systemd unit's User=,
// and the pod's fsGroup as a supplementary group.
const (
	tokenUID     = 4242
	tokenGID     = 4242
	tokenFSGroup = 2000
)

// tokenFileDir makes a directory every user may traverse (the suite's
// rootDir is 0700), holding a hard link of the gateway binary that the
// non-root user can run. It needs root: the files below it are given to
// root, fsGroup and the gateway's user as systemd and Kubernetes give them.
func tokenFileDir(t *testing.T) (dir, bin string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the token file layouts of systemd and Kubernetes need root to make (chown, setuid)")
	}
	dir, err := os.MkdirTemp("", "loom-token-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "gateway")
	if err := os.Link(gatewayBin, bin); err != nil {
		b, rerr := os.ReadFile(gatewayBin)
		if rerr != nil {
			t.Fatal(err, rerr)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// asUser runs the gateway as tokenUID with tokenGID and the supplementary
// groups, as a pod or a unit runs it.
func asUser(groups ...uint32) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tokenUID, Gid: tokenGID, Groups: groups}}
}

// kubernetesSecret lays out a Secret volume as the kubelet's atomic writer
// does: dir/..<timestamp>/token holding the data, dir/..data -> the
// timestamped directory, dir/token -> ..data/token; the file and the
// directory owned by root and group gid, the file of the given mode.
func kubernetesSecret(t *testing.T, dir, token string, gid int, mode os.FileMode) string {
	t.Helper()
	stamped := filepath.Join(dir, "..2026_12_07_02_15_14.1234567890")
	if err := os.MkdirAll(stamped, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o1777); err != nil { // the volume's tmpfs
		t.Fatal(err)
	}
	data := filepath.Join(stamped, "token")
	if err := os.WriteFile(data, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stamped, data} {
		if err := os.Chown(p, 0, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(stamped, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamped), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "token")
	if err := os.Symlink("..data/token", link); err != nil {
		t.Fatal(err)
	}
	return link
}

// posixACL is a system.posix_acl_access value: the owner's permissions,
// one named user's, no group and no other, and a mask, as setfacl writes
// it (linux/posix_acl_xattr.h).
func posixACL(owner, uid, user, mask uint16) []byte {
	const (
		aclUserObj  = 0x01
		aclUser     = 0x02
		aclGroupObj = 0x04
		aclMask     = 0x10
		aclOther    = 0x20
		undefinedID = 0xffffffff
	)
	b := binary.LittleEndian.AppendUint32(nil, 2) // POSIX_ACL_XATTR_VERSION
	entry := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	entry(aclUserObj, owner, undefinedID)
	entry(aclUser, user, uint32(uid))
	entry(aclGroupObj, 0, undefinedID)
	entry(aclMask, mask, undefinedID)
	entry(aclOther, 0, undefinedID)
	return b
}

// systemdCredential lays out $CREDENTIALS_DIRECTORY as systemd's
// LoadCredential= does for a unit with User=: the directory and the file
// owned by root, the file 0400 with an ACL giving the service's user read
// (so its mode reads 0440), the directory 0500 with an ACL giving it
// read and search (src/core/exec-credential.c, write_credential).
func systemdCredential(t *testing.T, dir, token string) (credDir, path string) {
	t.Helper()
	credDir = filepath.Join(dir, "credentials", "loom-gateway.service")
	if err := os.MkdirAll(credDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(credDir, "host-token")
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(path, "system.posix_acl_access", posixACL(4, tokenUID, 4, 4), 0); err != nil {
		t.Fatalf("setting the credential's ACL: %v (systemd falls back to chown on a file system without ACLs)", err)
	}
	if err := os.Chmod(credDir, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(credDir, "system.posix_acl_access", posixACL(5, tokenUID, 5, 5), 0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o440 {
		t.Fatalf("the credential's mode is %v, %v; want 0440 as systemd gives it", fi.Mode(), err)
	}
	return credDir, path
}

// runGatewayAs runs the gateway binary bin with attr until it exits, within
// 15 s, and returns its exit code and output.
func runGatewayAs(t testing.TB, bin string, attr *syscall.SysProcAttr, env []string, args ...string) (int, string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env = append(gatewayEnv(), env...)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	if cctx.Err() != nil {
		t.Fatalf("gateway %v still running after 15s (it should have exited)\n%s", args, out)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("gateway %v: %v", args, err)
	return 0, ""
}

// TestTokenFileLayouts: the host token file arrives as systemd and
// Kubernetes hand secrets to a non-root service, and the gateway takes it
// (it answers the host API with that token) or refuses it at once, exit 2,
// naming the fix.
func TestTokenFileLayouts(t *testing.T) {
	t.Parallel()
	dir, bin := tokenFileDir(t)
	token := "host-" + testkit.RandomHex(16)
	sub := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}

	accepted := func(t *testing.T, path string, attr *syscall.SysProcAttr, env []string) {
		t.Helper()
		g := &gateway{Dir: dir, HostToken: token, bin: bin, attr: attr, env: env}
		agentAddr, hostAddr := freePort(t), freePort(t)
		err := g.launch(t, []string{"--listen", agentAddr, "--host-listen", hostAddr, "--host-token-file", path, "--shutdown-timeout", "10s", "--log-format", "text"}, agentAddr, hostAddr)
		if err != nil {
			t.Fatalf("the gateway did not start: %v\n%s", err, g.output.String())
		}
		t.Cleanup(func() { g.stop(t) })
		resp, body := rawRequest(t, "GET", g.HostURL+"/host/v1/runs", token, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /host/v1/runs with the file's token: %d %s", resp.StatusCode, body)
		}
		resp, _ = rawRequest(t, "GET", g.HostURL+"/host/v1/runs", "host-"+testkit.RandomHex(16), "", nil)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /host/v1/runs with another token: %d, want 401", resp.StatusCode)
		}
	}
	refused := func(t *testing.T, path string, attr *syscall.SysProcAttr, want ...string) {
		t.Helper()
		code, out := runGatewayAs(t, bin, attr, nil, "--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", path)
		if code != 2 {
			t.Fatalf("exit %d, want 2\n%s", code, out)
		}
		for _, w := range append([]string{"--host-token-file " + path}, want...) {
			if !strings.Contains(out, w) {
				t.Errorf("the refusal does not say %q:\n%s", w, out)
			}
		}
	}

	t.Run("Kubernetes Secret with fsGroup (root:fsGroup 0440, symlinked ..data)", func(t *testing.T) {
		path := kubernetesSecret(t, sub("k8s-fsgroup"), token, tokenFSGroup, 0o440)
		accepted(t, path, asUser(tokenFSGroup), nil)
	})
	t.Run("Kubernetes Secret defaultMode 0400 without fsGroup (root:root)", func(t *testing.T) {
		path := kubernetesSecret(t, sub("k8s-0400"), token, 0, 0o400)
		refused(t, path, asUser(), "uid 4242", "may not read it", "owner uid 0, mode 0400", "fsGroup", "0440")
	})
	t.Run("Kubernetes Secret 0440 of a group the gateway is not in", func(t *testing.T) {
		path := kubernetesSecret(t, sub("k8s-othergroup"), token, tokenFSGroup, 0o440)
		refused(t, path, asUser(), "may not read it", "fsGroup")
	})
	t.Run("Kubernetes Secret defaultMode 0444", func(t *testing.T) {
		path := kubernetesSecret(t, sub("k8s-0444"), token, tokenFSGroup, 0o444)
		refused(t, path, asUser(tokenFSGroup), "open to others (mode 0444)", "chmod 600")
	})
	t.Run("Kubernetes Secret 0460 group-writable", func(t *testing.T) {
		path := kubernetesSecret(t, sub("k8s-0460"), token, tokenFSGroup, 0o460)
		refused(t, path, asUser(tokenFSGroup), "writable by its group (mode 0460)", "chmod g-w")
	})
	t.Run("systemd LoadCredential= (root 0440 by ACL in $CREDENTIALS_DIRECTORY)", func(t *testing.T) {
		credDir, path := systemdCredential(t, sub("systemd"), token)
		accepted(t, path, asUser(), []string{"CREDENTIALS_DIRECTORY=" + credDir})
	})
	t.Run("the gateway's own file 0600", func(t *testing.T) {
		path := filepath.Join(sub("own"), "host-token")
		writeFile(t, path, []byte(token+"\n"))
		if err := os.Chown(path, tokenUID, tokenGID); err != nil {
			t.Fatal(err)
		}
		accepted(t, path, asUser(), nil)
	})
	t.Run("the gateway's own file 0640", func(t *testing.T) {
		path := filepath.Join(sub("own-0640"), "host-token")
		writeFile(t, path, []byte(token+"\n"))
		if err := os.Chown(path, tokenUID, tokenGID); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		refused(t, path, asUser(), "open to its group (mode 0640) and owned by uid 4242", "$CREDENTIALS_DIRECTORY", "chmod 600 "+path)
	})
}

// TestTokenFileNotRegular: a token path that is a FIFO, a directory, a
// device or a socket is refused at once, exit 2, naming what it is; a FIFO
// used to hang startup with nothing logged.
func TestTokenFileNotRegular(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "tok-") // short: a socket's path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	for _, tc := range []struct{ name, path, want string }{
		{"a FIFO", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a directory", dir, "is a directory, not a regular file"},
		{"a device", "/dev/null", "is a device, not a regular file"},
		{"a socket", sock, "is a socket, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			code, out := runGateway(t, nil, "--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", tc.path)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, w := range []string{"--host-token-file " + tc.path, tc.want, "regular file"} {
				if !strings.Contains(out, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, out)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the refusal took %v", d)
			}
		})
	}
}
