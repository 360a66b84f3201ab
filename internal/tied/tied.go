// Package tied starts child processes that do not outlive the process
// that started them, however it ends: an orderly exit stops them by its
// own means, but a process killed outright (kill -9, the OOM killer, a
// test's timeout) runs no cleanup, and its children would keep running,
// holding ports, files and CPU.
package tied

import "os/exec"

// Start starts cmd, as cmd.Start does, tied to this process: where the
// system allows it (Linux), the kernel kills the child when this process
// dies. Elsewhere the child is started untied. Waiting for it and
// stopping it are the caller's, as with cmd.Start.
func Start(cmd *exec.Cmd) error { return start(cmd) }
