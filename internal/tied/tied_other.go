//go:build !linux

package tied

import "os/exec"

func start(cmd *exec.Cmd) error { return cmd.Start() }
