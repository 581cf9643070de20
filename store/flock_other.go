//go:build !unix

package store

import "os"

// Without flock the single-process rule is not enforced; chime's shell task
// is Unix-only too.
func flock(*os.File) error   { return nil }
func funlock(*os.File) error { return nil }
