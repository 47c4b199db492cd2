package loom

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestAwaitExit: awaitExit returns only once the child has exited, which
// a wait that does not block (WNOHANG) then reaps at once.
func TestAwaitExit(t *testing.T) {
	t.Parallel()
	for _, hold := range []string{"0", "0.3"} {
		cmd := exec.Command("/bin/sleep", hold)
		if err := cmd.Start(); err != nil {
			t.Skip("no /bin/sleep:", err)
		}
		awaitExit(cmd.Process.Pid)
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG, nil)
		if err != nil || pid != cmd.Process.Pid || !ws.Exited() || ws.ExitStatus() != 0 {
			t.Errorf("sleep %s: after awaitExit, wait4(WNOHANG) = %d, %v, status %v; want the child exited", hold, pid, err, ws)
		}
	}
}
