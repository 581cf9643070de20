// Package deploy holds chime's deployment files, not code: the Dockerfile's
// compose file (compose.yaml), the Helm chart (helm/chime) and the systemd
// unit (systemd/chime.service). Its tests check them: the unit with
// systemd-analyze verify where it runs, the others for what chime needs of
// them (probes, secrets, stop grace). The package has no code and imports
// nothing of chime's; its tests read configs for the shutdown grace.
package deploy
