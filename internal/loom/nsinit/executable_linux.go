package nsinit

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// memfd_create(2) and fcntl(2) sealing, which package syscall lacks.
const (
	sysMemfdCreate = 319 // x86-64; elf is empty elsewhere
	mfdCloexec     = 0x1
	mfdAllowSeal   = 0x2
	mfdExec        = 0x10 // needed where vm.memfd_noexec makes memfds noexec
	fAddSeals      = 1033
	sealAll        = 0x1 | 0x2 | 0x4 | 0x8 // seal, shrink, grow, write
)

// Executable returns a path at which this process and the children it
// starts can execute the C init (cinit/init.c): a sealed, close-on-exec
// memory file made on the first call and kept open for the life of the
// process, named through /proc/self/fd (the child execs its inherited
// copy, which exec then closes). Nothing is written to disk. An error
// where there is no C init for the architecture, or memory files cannot
// be made; package loom then runs the gateway's own executable as the
// init (Main).
var Executable = sync.OnceValues(func() (string, error) {
	if len(elf) == 0 {
		return "", errors.New("nsinit: no C init for this architecture")
	}
	name := []byte("loom-gateway-init\x00")
	fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), mfdCloexec|mfdAllowSeal|mfdExec, 0)
	if errno == syscall.EINVAL { // a kernel before MFD_EXEC
		fd, _, errno = syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), mfdCloexec|mfdAllowSeal, 0)
	}
	if errno != 0 {
		return "", errno
	}
	f := os.NewFile(fd, "loom-gateway-init")
	if _, err := f.Write(elf); err != nil {
		f.Close()
		return "", err
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, fAddSeals, sealAll); errno != 0 {
		f.Close()
		return "", errno
	}
	// f stays open (and reachable, so never finalized) for good.
	keep = f
	return "/proc/self/fd/" + strconv.Itoa(int(fd)), nil
})

// keep holds the memory file Executable made.
var keep *os.File
