//go:build !linux

package app

// hardenProcess has nothing to do where /proc/<pid>/environ does not exist.
func hardenProcess() error { return nil }

func dumpable() (bool, error) { return true, nil }
