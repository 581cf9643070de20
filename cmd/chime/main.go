// Command chime is the chime job scheduler: `chime serve` runs a node,
// `chime migrate` applies the schema, and the admin commands talk to a
// running node's API. Run `chime --help` for the list.
package main

import (
	"os"

	"github.com/chimesched/chime/cli"
)

func main() { os.Exit(cli.Main()) }
