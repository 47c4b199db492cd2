//go:build linux && amd64

#include "textflag.h"

// The inline init: see inline_linux_amd64.go. Block offsets (inlineBlock):
// path 0, argv 8, envp 16, fds 24/32/40, state 48, value 56, loom pid 64,
// init pid 72, gate 80, proc 88, "/" 96, "proc" 104, "/proc" 112,
// "tmpfs" 120, "/proc/1" 128.

// func rawClone(args *cloneArgs, blk uintptr) (pid, errno uintptr)
TEXT ·rawClone(SB),NOSPLIT,$16-32
	// Every signal blocked on this thread across the clone, so that the
	// child starts with them blocked.
	MOVQ	$-1, 0(SP)
	MOVQ	$14, AX // rt_sigprocmask
	MOVQ	$2, DI  // SIG_SETMASK
	LEAQ	0(SP), SI
	LEAQ	8(SP), DX
	MOVQ	$8, R10
	SYSCALL

	MOVQ	args+0(FP), DI
	MOVQ	$88, SI // sizeof(struct clone_args) up to cgroup
	MOVQ	blk+8(FP), R12
	MOVQ	$435, AX // clone3
	SYSCALL
	TESTQ	AX, AX
	JEQ	child
	MOVQ	AX, R13

	MOVQ	$14, AX // rt_sigprocmask: the mask back
	MOVQ	$2, DI
	LEAQ	8(SP), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	SYSCALL

	CMPQ	R13, $0xfffffffffffff001
	JLS	ok
	MOVQ	$-1, pid+16(FP)
	NEGQ	R13
	MOVQ	R13, errno+24(FP)
	RET
ok:
	MOVQ	R13, pid+16(FP)
	MOVQ	$0, errno+24(FP)
	RET

child:
	// The init: its own stack (the top of blk's buffer), the gateway's
	// memory, every signal blocked, every handler the default. Raw system calls only from here on;
	// it never returns. R12 is the block.
	SUBQ	$64, SP

gate:
	// In a new user namespace, wait for the gateway to write its maps
	// (gate 1: wait, 0: go on, anything else: give up).
	MOVL	80(R12), AX
	CMPL	AX, $0
	JEQ	gated
	CMPL	AX, $1
	JNE	exit
	MOVQ	$202, AX // futex(&gate, FUTEX_WAIT_PRIVATE, 1, nil)
	LEAQ	80(R12), DI
	MOVQ	$128, SI
	MOVQ	$1, DX
	XORQ	R10, R10
	SYSCALL
	JMP	gate
gated:

	// With proc, in the mount namespace clone3 made: every mount private,
	// so nothing reaches the gateway's, then a proc of this PID namespace
	// on /proc.
	CMPQ	88(R12), $0
	JEQ	mounted
	MOVQ	$165, AX // mount(NULL, "/", NULL, MS_REC|MS_PRIVATE, NULL)
	XORQ	DI, DI
	MOVQ	96(R12), SI
	XORQ	DX, DX
	MOVQ	$0x44000, R10
	XORQ	R8, R8
	SYSCALL
	TESTQ	AX, AX
	JNE	setupfail
	MOVQ	$165, AX // mount("proc", "/proc", "proc", MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL)
	MOVQ	104(R12), DI
	MOVQ	112(R12), SI
	MOVQ	104(R12), DX
	MOVQ	$14, R10
	XORQ	R8, R8
	SYSCALL
	TESTQ	AX, AX
	JNE	setupfail
	// The init's own entry shows the gateway's environment and memory
	// (CLONE_VM): an empty read-only tmpfs over it.
	MOVQ	$165, AX // mount("tmpfs", "/proc/1", "tmpfs", MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL)
	MOVQ	120(R12), DI
	MOVQ	128(R12), SI
	MOVQ	120(R12), DX
	MOVQ	$15, R10
	XORQ	R8, R8
	SYSCALL
	TESTQ	AX, AX
	JNE	setupfail
mounted:

	MOVQ	$109, AX // setpgid(0, 0)
	XORQ	DI, DI
	XORQ	SI, SI
	SYSCALL

	MOVQ	$157, AX // prctl(PR_SET_PDEATHSIG, SIGKILL)
	MOVQ	$1, DI
	MOVQ	$9, SI
	XORQ	DX, DX
	XORQ	R10, R10
	XORQ	R8, R8
	SYSCALL
	TESTQ	AX, AX
	JNE	setupfail

	MOVQ	$39, AX // getpid
	SYSCALL
	MOVQ	AX, 72(R12)

	MOVQ	$33, AX // dup2(stdin, 0)
	MOVQ	24(R12), DI
	MOVQ	$0, SI
	SYSCALL
	TESTQ	AX, AX
	JS	setupfail
	MOVQ	$33, AX // dup2(stdout, 1)
	MOVQ	32(R12), DI
	MOVQ	$1, SI
	SYSCALL
	TESTQ	AX, AX
	JS	setupfail
	MOVQ	$33, AX // dup2(stderr, 2)
	MOVQ	40(R12), DI
	MOVQ	$2, SI
	SYSCALL
	TESTQ	AX, AX
	JS	setupfail

	MOVQ	$436, AX // close_range(3, ~0U, 0): none of the gateway's descriptors
	MOVQ	$3, DI
	MOVQ	$0xffffffff, SI
	XORQ	DX, DX
	SYSCALL
	TESTQ	AX, AX
	JNE	setupfail

	MOVQ	$58, AX // vfork
	SYSCALL
	TESTQ	AX, AX
	JEQ	loom
	JS	setupfail
	MOVQ	AX, R13 // loom's pid
	CMPQ	48(R12), $70 // 'F': its exec failed
	JEQ	reap
	MOVQ	R13, 64(R12)
	MOVQ	$83, 48(R12) // 'S'

	MOVQ	$436, AX // close_range(0, ~0U, 0): the init holds nothing of loom's
	XORQ	DI, DI
	MOVQ	$0xffffffff, SI
	XORQ	DX, DX
	SYSCALL

wait:
	MOVQ	$61, AX // wait4(-1, &status, __WALL, 0): loom and every orphan
	MOVQ	$-1, DI
	LEAQ	0(SP), SI
	MOVQ	$0x40000000, DX
	XORQ	R10, R10
	SYSCALL
	CMPQ	AX, $-4 // EINTR
	JEQ	wait
	TESTQ	AX, AX
	JS	exit
	CMPQ	AX, R13
	JNE	wait
	MOVL	0(SP), AX
	MOVQ	AX, 56(R12)
	MOVQ	$87, 48(R12) // 'W'
exit:
	MOVQ	$231, AX // exit_group(0); the namespace goes with the init
	XORQ	DI, DI
	SYSCALL
	JMP	exit

reap:
	MOVQ	$61, AX // wait4(loom, &status, __WALL, 0)
	MOVQ	R13, DI
	LEAQ	0(SP), SI
	MOVQ	$0x40000000, DX
	XORQ	R10, R10
	SYSCALL
	CMPQ	AX, $-4
	JEQ	reap
	JMP	exit

setupfail:
	NEGQ	AX
	MOVQ	AX, 56(R12)
	MOVQ	$69, 48(R12) // 'E'
	JMP	exit

loom:
	// vfork's child, on the init's stack while the init waits: signals
	// unblocked, then loom's exec.
	MOVQ	$0, 56(SP)
	MOVQ	$14, AX // rt_sigprocmask(SIG_SETMASK, {}, nil, 8)
	MOVQ	$2, DI
	LEAQ	56(SP), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	SYSCALL
	MOVQ	$59, AX // execve(path, argv, envp)
	MOVQ	0(R12), DI
	MOVQ	8(R12), SI
	MOVQ	16(R12), DX
	SYSCALL
	NEGQ	AX
	MOVQ	AX, 56(R12)
	MOVQ	$70, 48(R12) // 'F'
loomexit:
	MOVQ	$231, AX // exit_group(127)
	MOVQ	$127, DI
	SYSCALL
	JMP	loomexit
