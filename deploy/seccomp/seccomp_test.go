package seccomp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite loom-gateway.json from testdata/docker-default.json")

// profile is a seccomp profile in Docker's format; decoding is strict, so
// that nothing of Docker's is lost on the way through.
type profile struct {
	DefaultAction   string    `json:"defaultAction"`
	DefaultErrnoRet *uint     `json:"defaultErrnoRet,omitempty"`
	ArchMap         []archMap `json:"archMap"`
	Syscalls        []rule    `json:"syscalls"`
}

type archMap struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

type rule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []arg    `json:"args,omitempty"`
	Comment  string   `json:"comment,omitempty"`
	Includes *filter  `json:"includes,omitempty"`
	Excludes *filter  `json:"excludes,omitempty"`
}

type arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

type filter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// Namespace flags of clone(2) and unshare(2).
const (
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	// allNamespaces is the mask Docker's profile refuses clone under
	// without CAP_SYS_ADMIN.
	allNamespaces = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet
	// ours are the namespaces a loom command's init is made in: a user
	// namespace (a gateway without CAP_SYS_ADMIN), a PID namespace, and a
	// mount namespace to mount the namespace's own /proc in.
	ours = cloneNewUser | cloneNewPID | cloneNewNS
)

// derive returns Docker's profile d with what a loom command's namespace
// needs without CAP_SYS_ADMIN, and nothing else:
//   - clone may make a user, PID and mount namespace (Docker's rule
//     refuses every namespace flag; the others stay refused);
//   - clone3 is allowed (Docker answers ENOSYS so that the C library falls
//     back to clone; the gateway's inline init needs clone3 itself, for
//     CLONE_CLEAR_SIGHAND and CLONE_PIDFD). Its flags lie in memory, where
//     seccomp cannot read them: the kernel's own checks hold (a namespace
//     other than a user namespace needs CAP_SYS_ADMIN in the user
//     namespace the process is in);
//   - unshare, with the same flags as clone;
//   - mount and umount2, for the init's /proc: the kernel lets them
//     succeed only in a mount namespace owned by a user namespace of the
//     caller's own.
//
// The rules Docker gives a container with CAP_SYS_ADMIN are unchanged.
func derive(d profile) profile {
	p := d
	p.Syscalls = nil
	for _, r := range d.Syscalls {
		switch {
		case slices.Equal(r.Names, []string{"clone3"}) && r.Action == "SCMP_ACT_ERRNO":
			continue // replaced below
		case slices.Equal(r.Names, []string{"clone"}) && len(r.Args) == 1 && r.Args[0].Value == allNamespaces:
			r.Args = []arg{r.Args[0]}
			r.Args[0].Value = allNamespaces &^ ours
			c := "loom-gateway: clone may make a user, PID and mount namespace"
			if r.Comment != "" {
				c = r.Comment + "; " + c
			}
			r.Comment = c
		}
		p.Syscalls = append(p.Syscalls, r)
	}
	noAdmin := &filter{Caps: []string{"CAP_SYS_ADMIN"}}
	p.Syscalls = append(p.Syscalls,
		rule{
			Names:    []string{"clone3"},
			Action:   "SCMP_ACT_ALLOW",
			Comment:  "loom-gateway: each loom command's init is started with clone3 (CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWNS, CLONE_PIDFD, CLONE_CLEAR_SIGHAND)",
			Excludes: noAdmin,
		},
		rule{
			Names:    []string{"unshare"},
			Action:   "SCMP_ACT_ALLOW",
			Args:     []arg{{Index: 0, Value: allNamespaces &^ ours, Op: "SCMP_CMP_MASKED_EQ"}},
			Comment:  "loom-gateway: unshare may make a user, PID and mount namespace",
			Excludes: noAdmin,
		},
		rule{
			Names:    []string{"mount", "umount2"},
			Action:   "SCMP_ACT_ALLOW",
			Comment:  "loom-gateway: the init of a loom command mounts its namespace's /proc, in a mount namespace of its user namespace",
			Excludes: noAdmin,
		},
	)
	return p
}

func decode(t *testing.T, path string) (profile, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p profile
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p, b
}

func encode(p profile) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "\t")
	_ = enc.Encode(p)
	return buf.Bytes()
}

// TestDockerDefaultRoundTrips: the struct above holds all of Docker's
// profile (its encoding is the file's, byte for byte), so that derive
// drops nothing.
func TestDockerDefaultRoundTrips(t *testing.T) {
	d, raw := decode(t, "testdata/docker-default.json")
	if got := encode(d); !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(raw)) {
		t.Fatal("testdata/docker-default.json does not survive a decode and encode: the profile type misses a field")
	}
}

// TestProfile: loom-gateway.json is Docker's default profile with
// derive's changes and nothing else.
func TestProfile(t *testing.T) {
	d, _ := decode(t, "testdata/docker-default.json")
	want := encode(derive(d))
	if *update {
		if err := os.WriteFile("loom-gateway.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("loom-gateway.json rewritten: run the test again")
		return
	}
	if !bytes.Equal(Profile, want) {
		t.Fatal("loom-gateway.json is not Docker's default with derive's changes: go test ./deploy/seccomp -update")
	}
	p, _ := decode(t, "loom-gateway.json")
	// What the namespace needs is there, for a container without
	// CAP_SYS_ADMIN, and what Docker refuses besides stays refused.
	allowed := func(name string, flags uint64) bool {
		for _, r := range p.Syscalls {
			if !slices.Contains(r.Names, name) || r.Action != "SCMP_ACT_ALLOW" {
				continue
			}
			if r.Includes != nil && (len(r.Includes.Caps) > 0 || slices.Contains(r.Includes.Arches, "s390x")) {
				continue
			}
			if len(r.Args) == 0 {
				return true
			}
			a := r.Args[0]
			if a.Index == 0 && a.Op == "SCMP_CMP_MASKED_EQ" && flags&a.Value == a.ValueTwo {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name  string
		flags uint64
		want  bool
	}{
		{"clone", cloneNewUser | cloneNewPID, true},
		{"clone", cloneNewUser | cloneNewPID | cloneNewNS, true},
		{"clone", 0x11 /* SIGCHLD */, true},
		{"clone", cloneNewUser | cloneNewNet, false},
		{"clone", cloneNewUTS, false},
		{"clone", cloneNewIPC, false},
		{"clone", cloneNewCgroup, false},
		{"unshare", cloneNewUser | cloneNewPID | cloneNewNS, true},
		{"unshare", cloneNewNet, false},
		{"clone3", 0, true},
		{"mount", 0, true},
		{"umount2", 0, true},
		{"setns", 0, false},
		{"pivot_root", 0, false},
		{"bpf", 0, false},
	} {
		if got := allowed(c.name, c.flags); got != c.want {
			t.Errorf("%s with flags %#x allowed without CAP_SYS_ADMIN: %v, want %v", c.name, c.flags, got, c.want)
		}
	}
	// The difference from Docker's is the derive's, rule by rule.
	var changed []string
	for _, r := range p.Syscalls {
		if strings.Contains(r.Comment, "loom-gateway:") {
			changed = append(changed, strings.Join(r.Names, ","))
		}
	}
	if want := []string{"clone", "clone", "clone3", "unshare", "mount,umount2"}; !slices.Equal(changed, want) {
		t.Errorf("rules changed or added: %v, want %v (clone for other architectures and for s390)", changed, want)
	}
	if len(p.Syscalls) != len(d.Syscalls)+2 {
		t.Errorf("%d rules, Docker's has %d: want two more (three added, Docker's clone3 ENOSYS rule removed)", len(p.Syscalls), len(d.Syscalls))
	}
}
