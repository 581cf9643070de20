// Package deploy holds chime's deployment files, not code: the Dockerfile's
// compose file (compose.yaml), the Helm chart (helm/chime) and the systemd
// unit (systemd/chime.service). Its tests check them: the unit with
// systemd-analyze verify where it runs, the chart with helm lint and the
// manifests helm template renders, the image that scripts/image.sh writes
// as an OCI layout, and the Dockerfile and compose file as text, each for
// what chime needs of it (probes, secrets, stop grace, user, volume). The
// package has no code and imports nothing of chime's; its tests read
// configs for the shutdown grace. deploy/tools is a module of its own (helm
// and the image writer, with their dependencies), outside chime's go.mod.
package deploy
