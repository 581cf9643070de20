// Package console is chime's web console: server-rendered pages for admins
// (overview, schedules, jobs, job definitions, nodes) served by every node
// at "/" on the API's address, beside /api/v1. Templates and static files
// are embedded with go:embed; nothing is fetched from elsewhere, and
// building needs no front-end toolchain.
//
// Reads go through chimedb.ConsoleStore: the admin queries, the indexed,
// cursor-paginated ones the API serves, plus the counts and names the
// pages add (AdminQueries' CountJobsByStatus, LastJobs, ...), which stay
// on the jobs table's (status, claim_key, id) and (schedule_id,
// scheduled_at) indexes (TestQueriesUseIndexes). Every write is an in-process request to the API's own routes
// (see api.Config.Console), so a form is validated, stored and logged
// exactly as the same JSON request would be, and its field errors come
// back with the API's words.
//
// Security: a login page takes the API token; the session is a signed
// cookie (HMAC keyed by the token, a fresh nonce per login, HttpOnly,
// SameSite=Strict; Secure with the __Host- prefix when browsers come over
// HTTPS, see Config.Secure), so every node that shares the token
// accepts it and changing the token ends every session. Logout writes the
// nonce to the console_revocations table until the cookie's expiry, which
// every node checks, so a logged-out cookie stays dead across the cluster
// and across restarts. Every POST carries a per-session CSRF token and
// passes the API's cross-origin protection; pages carry a strict
// Content-Security-Policy (no inline script) and refuse framing. html/template escapes everything shown, since job
// results and logs are plugin output. Without a token (loopback only, as
// for the API) the console opens a session without a login.
//
// console may import api, chimedb, models, trigger, configs (to mask
// secrets as settings are masked) and tasks; never store, so no driver
// (chimedb's TestSeamHasNoDrivers checks it). api never imports it (app
// wires the two, and hands the console a *store.Store).
package console
