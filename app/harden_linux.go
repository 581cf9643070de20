package app

import "syscall"

// prSetDumpable and prGetDumpable are prctl(2) options.
const (
	prSetDumpable = 4
	prGetDumpable = 3
)

// hardenProcess makes the serving process non-dumpable. Jobs run as the
// server's user, and a same-user process may otherwise read
// /proc/<server pid>/environ (CHIME_SMTP_PASSWORD, CHIME_API_TOKEN,
// CHIME_DATABASE_DSN) or attach a debugger to it; for a non-dumpable process
// the kernel allows that only with CAP_SYS_PTRACE. Children get the flag
// back on execve, so jobs themselves are unaffected. The cost: no core dumps
// of chime, and debugging it needs root.
func hardenProcess() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// dumpable reports the flag hardenProcess clears.
func dumpable() (bool, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0)
	if errno != 0 {
		return false, errno
	}
	return r != 0, nil
}
