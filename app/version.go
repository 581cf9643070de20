package app

import "github.com/chimesched/chime/internal/buildinfo"

// Version is chime's version. Release builds set
// github.com/chimesched/chime/internal/buildinfo.Version (with Commit and
// Date) by -ldflags; this older setter,
// -ldflags "-X github.com/chimesched/chime/app.Version=v1.2.3", still
// works and wins over it when set.
var Version = "dev"

// Build is this binary's identity as every part of a node reports it: the
// nodes table, the API's /api/v1/version, the console's footer, the start
// log line and `chime version`.
func Build() buildinfo.Info {
	in := buildinfo.Get()
	if Version != "dev" && Version != "" {
		in.Version = Version
	}
	return in
}

// nodeVersion is what the nodes table records: nodes.version is
// VARCHAR(64), and a long -ldflags version must not stop a node joining.
func nodeVersion() string {
	v := Build().Short()
	if len(v) > 64 {
		v = v[:64]
	}
	return v
}
