/* The namespace init of package nsinit for linux/amd64, in C without libc:
   what nsinit.Main does, as a static executable of about a kilobyte, so
   that a loom command costs one more exec of next to nothing rather than a
   Go runtime's start-up. argv[1..] is loom's argv, run with envp and
   descriptors 0-2; the reports go to descriptor 3 (closed on exec) in
   nsinit.Report's format. With no argv[1] it exits 0 when it is pid 1, 1
   otherwise (the probe). Started as nsinit.NameProc it first mounts a
   /proc of its PID namespace and drops every capability, as
   nsinit.MountProc does. Build (nsinit's elf_linux_amd64.go holds the
   result, written by cinit/build.sh):

     gcc -Os -static -nostdlib -fno-stack-protector \
       -fno-asynchronous-unwind-tables -fno-pie -no-pie \
       -Wl,--build-id=none -Wl,-z,norelro -Wl,-z,noseparate-code -s \
       -o init init.c && strip -R .comment init
*/
typedef unsigned long u64;
static long sys(long n, long a, long b, long c, long d) {
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}
static void report(char kind, unsigned v) {
	char b[5] = {kind, (char)v, (char)(v >> 8), (char)(v >> 16), (char)(v >> 24)};
	long off = 0;
	while (off < 5) {
		long n = sys(1, 3, (long)(b + off), 5 - off, 0);
		if (n == -4) continue; /* EINTR */
		if (n <= 0) return;
		off += n;
	}
}
static long sys5(long n, long a, long b, long c, long d, long e) {
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return r;
}
static int same(const char *a, const char *b) {
	while (*a && *a == *b) a++, b++;
	return *a == *b;
}
static void quit(int code) { for (;;) sys(231, code, 0, 0, 0); }
static volatile long execErr;
void start_c(long *sp) {
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	if (same(argv[0], "loom-gateway-init-proc")) {
		/* nsinit.NameProc: every mount private (MS_REC|MS_PRIVATE), then a
		   proc of this PID namespace on /proc (MS_NOSUID|MS_NODEV|MS_NOEXEC). */
		long r = sys5(165, 0, (long)"/", 0, 0x44000, 0);
		if (r == 0) r = sys5(165, (long)"proc", (long)"/proc", (long)"proc", 14, 0);
		/* The gateway raised CAP_SYS_ADMIN as an ambient capability for
		   the mount (a gateway that is not root in its user namespace
		   loses its capabilities at this init's exec otherwise): drop
		   every capability, ambient and inheritable included, before loom
		   runs. capset(version 3, this process, all sets empty). */
		if (r == 0) {
			unsigned hdr[2] = {0x20080522, 0};
			unsigned data[6] = {0};
			r = sys(126, (long)hdr, (long)data, 0, 0);
		}
		if (r < 0) {
			if (argc < 2) quit(1);
			sys(72, 3, 2, 1, 0);
			report('F', (unsigned)-r);
			quit(127);
		}
	}
	if (argc < 2) quit(sys(39, 0, 0, 0, 0) == 1 ? 0 : 1); /* getpid */
	sys(72, 3, 2, 1, 0); /* fcntl(3, F_SETFD, FD_CLOEXEC) */
	execErr = 0;
	long pid = sys(58, 0, 0, 0, 0); /* vfork */
	if (pid == 0) {
		long r = sys(59, (long)argv[1], (long)(argv + 1), (long)envp, 0);
		execErr = -r;
		quit(127);
	}
	if (pid < 0) { report('F', (unsigned)-pid); quit(127); }
	if (execErr) { int st; sys(61, pid, (long)&st, 0, 0); report('F', (unsigned)execErr); quit(127); }
	report('S', 0);
	for (;;) {
		int st = 0;
		long got = sys(61, -1, (long)&st, 0, 0); /* wait4 */
		if (got == -4) continue;
		if (got < 0) quit(126);
		if (got != pid) continue;
		report('W', (unsigned)st);
		if ((st & 0x7f) == 0) quit((st >> 8) & 0xff);
		quit(128 + (st & 0x7f));
	}
}
__asm__(".global _start\n_start:\n mov %rsp, %rdi\n and $-16, %rsp\n call start_c\n hlt\n");
