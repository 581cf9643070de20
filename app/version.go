package app

// Version is chime's version, set at build time with
// -ldflags "-X github.com/chimesched/chime/app.Version=v1.2.3".
var Version = "dev"
