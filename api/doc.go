// Package api is chime's HTTP JSON admin API: job definitions, schedules,
// jobs and their logs and control actions, nodes and configurations under
// /api/v1, plus /healthz, /readyz, /metrics and the OpenAPI document at
// /api/v1/openapi.json (kept in this directory as openapi.json).
//
// Everything an engine would reject is rejected here first, with 400 and
// {"error": "...", "field": "..."}: nothing invalid reaches the tables
// through the API. The rules are package validate's, which every other
// writer (chime import quartz) uses too. JSON field names are the column names of the SQL
// contract (see models). Rows written by SQL are shown as they are, except
// a JSON column that is not valid JSON: that row is shown with the column
// null and invalid/invalid_reason set (Validity), and every answer is
// encoded before it is sent, so nothing a row holds empties a list. Changes take effect at once on the serving node
// through Config.OnSchedulesChanged and Config.OnJobsAdded.
//
// Lifecycle: New validates the configuration (it refuses a non-loopback
// address without a token, or with one shorter than MinTokenLength, and
// warns about a short one on loopback), Start
// listens and serves (HTTPS with Config.TLSCert/TLSKey) in the background,
// Stop shuts down gracefully. Handler serves tests without a listener.
//
// Browsers on the admin's machine can reach a loopback API, so every route
// sits behind http.CrossOriginProtection, bodies must be application/json,
// a tokenless server answers only loopback Host headers (DNS rebinding),
// and answers carry X-Content-Type-Options: nosniff (see guard.go).
// Failed bearer-token checks are logged at info and limited per client
// address; an address past the limit gets 429 (see auth.go).
//
// api may import chimedb (the database, through chimedb.AdminStore),
// validate, models, tasks, configs (to check settings), trigger (for
// next_fires), scheduleengine (only its pure PreviewResume, for a paused
// schedule's catch_up_on_resume), internal/metrics and
// internal/strictjson; it never imports store (and so no driver), app,
// cli or the task engine (chimedb's TestSeamHasNoDrivers checks the store
// and the drivers).
package api
