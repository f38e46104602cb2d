package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// stopWithGoRun makes a server started by `go run` stop when `go run`
// does: `go run` exits on SIGTERM without passing it on, which would leave
// the server running with no parent. When the parent process is `go run`,
// the kernel is asked to send SIGTERM to the server when its parent exits
// (PR_SET_PDEATHSIG). Binaries built with go build or go install, started
// by anything else, are not affected. (Run a service from a built binary:
// see README, "Run it as a service".)
func stopWithGoRun() {
	ppid := os.Getppid()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if err != nil {
		return
	}
	args := bytes.Split(cmdline, []byte{0})
	if len(args) < 2 || filepath.Base(string(args[0])) != "go" || string(args[1]) != "run" {
		return
	}
	const prSetPdeathsig = 1
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetPdeathsig, uintptr(syscall.SIGTERM), 0); errno != 0 {
		return
	}
	if os.Getppid() != ppid { // go run exited before the request
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
