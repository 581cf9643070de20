package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Principal is who sent a request: the bootstrap admin (the configured
// token), a named token of api_tokens, or, on a server without a token,
// anyone on this host.
type Principal struct {
	// Name is the token's name; BootstrapName for the configured token.
	Name string
	Role models.Role
	// Scope, when not empty, is the prefix of the job definition names
	// the principal may see and touch (and their schedules and jobs).
	Scope string
	// Via is the door the request came through: "api" or "console".
	Via string
}

// Names of the principals that are no row of api_tokens.
const (
	BootstrapName = "bootstrap"
	// OpenName is everyone, on a loopback server without a token.
	OpenName = "local (no token configured)"
)

type principalKey struct{}

// WithPrincipal returns ctx carrying p. The console, which calls the
// API's routes in-process, authenticates its sessions itself and hands
// the API the session's principal this way; a request from the network
// cannot carry one.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the principal of a request the API authenticated,
// or nil.
func PrincipalOf(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// HashToken is the api_tokens.token_sha256 of a token: lower-case hex.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// objectKind is what the {id} of a route names, whose scope (and task
// type) is checked before the handler runs.
type objectKind int

const (
	noObject objectKind = iota
	definitionObject
	scheduleObject
	jobObject
	// sharedObject: the {id} names an object no scope covers (a workflow,
	// a run, an alert channel or rule); its route is unscoped, so a scoped
	// principal never reaches it and nothing is left to check.
	sharedObject
)

// rule is who may take a route.
type rule struct {
	// role is the least role that may.
	role models.Role
	// object is what the path's {id} names: a scoped principal reaches
	// only objects of its scope; others are answered as if they did not
	// exist, so their ids and names do not leak.
	object objectKind
	// unscoped: the route touches objects no scope covers (calendars,
	// configurations, tokens), so it is refused to a scoped principal.
	unscoped bool
	// changesTask: the route changes what runs, so the object's task
	// type must be one the principal's role may edit (see
	// Config.EditorTaskTypes).
	changesTask bool
}

// routeRules holds the rule of every route of routeTable, keyed by
// "METHOD path". A route without a rule is refused to all but admins, and
// fails TestEveryRouteHasARule. Handlers check what a body names (the
// definition a schedule or run names, a definition's name and task type);
// these rules check the route and the object of its path.
var routeRules = map[string]rule{
	"GET " + Prefix + "/openapi.json": {role: models.RoleViewer},

	"GET " + Prefix + "/definitions":         {role: models.RoleViewer},
	"POST " + Prefix + "/definitions":        {role: models.RoleEditor},
	"GET " + Prefix + "/definitions/{id}":    {role: models.RoleViewer, object: definitionObject},
	"PATCH " + Prefix + "/definitions/{id}":  {role: models.RoleEditor, object: definitionObject, changesTask: true},
	"DELETE " + Prefix + "/definitions/{id}": {role: models.RoleEditor, object: definitionObject, changesTask: true},

	"GET " + Prefix + "/schedules":               {role: models.RoleViewer},
	"POST " + Prefix + "/schedules":              {role: models.RoleEditor},
	"GET " + Prefix + "/schedules/{id}":          {role: models.RoleViewer, object: scheduleObject},
	"PATCH " + Prefix + "/schedules/{id}":        {role: models.RoleEditor, object: scheduleObject, changesTask: true},
	"DELETE " + Prefix + "/schedules/{id}":       {role: models.RoleEditor, object: scheduleObject, changesTask: true},
	"POST " + Prefix + "/schedules/{id}/pause":   {role: models.RoleOperator, object: scheduleObject},
	"POST " + Prefix + "/schedules/{id}/resume":  {role: models.RoleOperator, object: scheduleObject},
	"POST " + Prefix + "/schedules/{id}/trigger": {role: models.RoleOperator, object: scheduleObject},
	"GET " + Prefix + "/calendars":               {role: models.RoleViewer},
	"POST " + Prefix + "/calendars":              {role: models.RoleEditor, unscoped: true},
	"GET " + Prefix + "/calendars/{id}":          {role: models.RoleViewer},
	"PATCH " + Prefix + "/calendars/{id}":        {role: models.RoleEditor, unscoped: true},
	"DELETE " + Prefix + "/calendars/{id}":       {role: models.RoleEditor, unscoped: true},
	"GET " + Prefix + "/jobs":                    {role: models.RoleViewer},
	"POST " + Prefix + "/jobs":                   {role: models.RoleOperator},
	"GET " + Prefix + "/jobs/{id}":               {role: models.RoleViewer, object: jobObject},
	"GET " + Prefix + "/jobs/{id}/logs":          {role: models.RoleViewer, object: jobObject},
	"POST " + Prefix + "/jobs/{id}/pause":        {role: models.RoleOperator, object: jobObject},
	"POST " + Prefix + "/jobs/{id}/resume":       {role: models.RoleOperator, object: jobObject},
	"POST " + Prefix + "/jobs/{id}/stop":         {role: models.RoleOperator, object: jobObject},
	"POST " + Prefix + "/jobs/{id}/reset":        {role: models.RoleOperator, object: jobObject},
	"GET " + Prefix + "/notifications":           {role: models.RoleViewer},
	"GET " + Prefix + "/nodes":                   {role: models.RoleViewer},
	"POST " + Prefix + "/nodes/{node}/drain":     {role: models.RoleOperator, unscoped: true},
	"POST " + Prefix + "/nodes/{node}/undrain":   {role: models.RoleOperator, unscoped: true},
	"GET " + Prefix + "/configurations":          {role: models.RoleViewer, unscoped: true},
	"GET " + Prefix + "/configurations/{name}":   {role: models.RoleViewer, unscoped: true},
	"PUT " + Prefix + "/configurations/{name}":   {role: models.RoleAdmin, unscoped: true},
	"GET " + Prefix + "/whoami":                  {role: models.RoleViewer},
	"GET " + Prefix + "/tokens":                  {role: models.RoleAdmin, unscoped: true},
	"POST " + Prefix + "/tokens":                 {role: models.RoleAdmin, unscoped: true},
	"POST " + Prefix + "/tokens/{name}/revoke":   {role: models.RoleAdmin, unscoped: true},
	// The audit log names every object and principal: admins only.
	"GET " + Prefix + "/audit": {role: models.RoleAdmin, unscoped: true},
	// A secret's name is shown to admins only: a name says what a
	// credential is for.
	"GET " + Prefix + "/secrets":           {role: models.RoleAdmin, unscoped: true},
	"POST " + Prefix + "/secrets":          {role: models.RoleAdmin, unscoped: true},
	"DELETE " + Prefix + "/secrets/{name}": {role: models.RoleAdmin, unscoped: true},
	"POST " + Prefix + "/secrets/rotate":   {role: models.RoleAdmin, unscoped: true},
	"GET " + Prefix + "/version":           {role: models.RoleViewer},

	// Workflows span many definitions, so no scope covers them. Their
	// steps may override a definition's params (a shell step's command),
	// so writing one is an admin's; starting, stopping and rerunning a run
	// runs what an admin wrote, as an operator's run-now does.
	"GET " + Prefix + "/workflows":            {role: models.RoleViewer, unscoped: true},
	"POST " + Prefix + "/workflows":           {role: models.RoleAdmin, unscoped: true},
	"GET " + Prefix + "/workflows/{id}":       {role: models.RoleViewer, object: sharedObject, unscoped: true},
	"DELETE " + Prefix + "/workflows/{id}":    {role: models.RoleAdmin, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/workflows/{id}/runs": {role: models.RoleOperator, object: sharedObject, unscoped: true},
	"GET " + Prefix + "/runs":                 {role: models.RoleViewer, unscoped: true},
	"GET " + Prefix + "/runs/{id}":            {role: models.RoleViewer, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/runs/{id}/cancel":    {role: models.RoleOperator, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/runs/{id}/rerun":     {role: models.RoleOperator, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/runs/{id}/pause":     {role: models.RoleOperator, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/runs/{id}/resume":    {role: models.RoleOperator, object: sharedObject, unscoped: true},

	// A channel is where chime sends what it knows (an URL, a signing
	// key): admin's. Rules say which events go there; a test send goes
	// where an admin pointed it.
	"GET " + Prefix + "/alert-channels":            {role: models.RoleViewer, unscoped: true},
	"POST " + Prefix + "/alert-channels":           {role: models.RoleAdmin, unscoped: true},
	"PATCH " + Prefix + "/alert-channels/{id}":     {role: models.RoleAdmin, object: sharedObject, unscoped: true},
	"DELETE " + Prefix + "/alert-channels/{id}":    {role: models.RoleAdmin, object: sharedObject, unscoped: true},
	"POST " + Prefix + "/alert-channels/{id}/test": {role: models.RoleOperator, object: sharedObject, unscoped: true},
	"GET " + Prefix + "/alert-rules":               {role: models.RoleViewer, unscoped: true},
	"POST " + Prefix + "/alert-rules":              {role: models.RoleEditor, unscoped: true},
	"PATCH " + Prefix + "/alert-rules/{id}":        {role: models.RoleEditor, object: sharedObject, unscoped: true},
	"DELETE " + Prefix + "/alert-rules/{id}":       {role: models.RoleEditor, object: sharedObject, unscoped: true},
	"GET " + Prefix + "/alerts":                    {role: models.RoleViewer, unscoped: true},

	// Queues are shared by every team's definitions: limits are an
	// editor's, holding a queue's starts back an operator's.
	"GET " + Prefix + "/queues":                {role: models.RoleViewer, unscoped: true},
	"GET " + Prefix + "/queues/{name}":         {role: models.RoleViewer, unscoped: true},
	"PUT " + Prefix + "/queues/{name}":         {role: models.RoleEditor, unscoped: true},
	"DELETE " + Prefix + "/queues/{name}":      {role: models.RoleEditor, unscoped: true},
	"POST " + Prefix + "/queues/{name}/pause":  {role: models.RoleOperator, unscoped: true},
	"POST " + Prefix + "/queues/{name}/resume": {role: models.RoleOperator, unscoped: true},
}

// ruleOf is the rule of a route; a route without one is admin-only.
func ruleOf(method, path string) rule {
	if ru, ok := routeRules[method+" "+path]; ok {
		return ru
	}
	return rule{role: models.RoleAdmin, unscoped: true}
}

// forbidden is the 403 of a principal whose role or scope does not allow
// the route. It names the role needed, never an object.
func forbidden(format string, args ...any) *apiError {
	e := badRequest("", format, args...)
	e.status = http.StatusForbidden
	return e
}

// permit checks the route's rule for p before the handler runs.
func (s *Server) permit(r *http.Request, p *Principal, ru rule) *apiError {
	if p.Role.Rank() < ru.role.Rank() {
		return forbidden("role %s may not %s %s; it needs role %s or above", p.Role, r.Method, r.Pattern, ru.role)
	}
	if p.Scope != "" && ru.unscoped {
		return forbidden("a token scoped to %q may not %s %s: it touches what every team shares", p.Scope, r.Method, r.Pattern)
	}
	if ru.object == noObject || ru.object == sharedObject || (p.Scope == "" && !ru.changesTask) {
		return nil
	}
	def, e := s.definitionOfPath(r, ru.object)
	if e != nil || def == nil {
		return e // the handler answers a missing object
	}
	if !inScope(p, def.Name) {
		return hidden(r, ru.object)
	}
	if ru.changesTask {
		return s.mayEditTask(p, def.TaskType, "")
	}
	return nil
}

// hidden answers an object out of the principal's scope as the handler
// answers one that does not exist.
func hidden(r *http.Request, k objectKind) *apiError {
	what := map[objectKind]string{definitionObject: "job definition", scheduleObject: "schedule", jobObject: "job"}[k]
	return notFound("%s %s does not exist", what, r.PathValue("id"))
}

// definitionOfPath loads the definition the path's object belongs to;
// nil when the object (or its definition) does not exist or the id is
// malformed, which the handler then reports.
func (s *Server) definitionOfPath(r *http.Request, k objectKind) (*models.JobDefinition, *apiError) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return nil, nil
	}
	admin := s.st.Admin()
	defID := id
	switch k {
	case scheduleObject:
		sch, err := admin.GetSchedule(r.Context(), id)
		if err != nil {
			return nil, s.missingOr(r, err)
		}
		defID = sch.JobDefinitionID
	case jobObject:
		j, err := admin.GetJob(r.Context(), id)
		if err != nil {
			return nil, s.missingOr(r, err)
		}
		defID = j.JobDefinitionID
	}
	d, err := admin.GetDefinition(r.Context(), defID)
	if err != nil {
		if errors.Is(err, chimedb.ErrNotFound) && k != definitionObject {
			// An orphan belongs to no team: only the unscoped see it.
			if p := PrincipalOf(r.Context()); p != nil && p.Scope != "" {
				return nil, hidden(r, k)
			}
		}
		return nil, s.missingOr(r, err)
	}
	return d, nil
}

func (s *Server) missingOr(r *http.Request, err error) *apiError {
	if errors.Is(err, chimedb.ErrNotFound) {
		return nil
	}
	return s.fromStore(r, err, "an object")
}

// inScope says whether p may see the definition named name.
func inScope(p *Principal, name string) bool {
	return p == nil || strings.HasPrefix(name, p.Scope)
}

// editorTaskTypes are the task types an editor may create, change and
// delete definitions and schedules of: those of Config.EditorTaskTypes,
// by default every registered type but shell and httpcall, which run
// what their params say (a command, any URL).
func (s *Server) editorTaskTypes() []string {
	if s.cfg.EditorTaskTypes != nil {
		return s.cfg.EditorTaskTypes
	}
	var out []string
	for _, t := range s.cfg.Registry.Kinds() {
		if t != "shell" && t != "httpcall" {
			out = append(out, t)
		}
	}
	return out
}

// mayEditTask checks that p's role may change what a definition of
// taskType runs.
func (s *Server) mayEditTask(p *Principal, taskType, field string) *apiError {
	if p == nil || p.Role == models.RoleAdmin {
		return nil
	}
	if p.Role.Rank() >= models.RoleEditor.Rank() && slices.Contains(s.editorTaskTypes(), taskType) {
		return nil
	}
	need := models.RoleAdmin
	if slices.Contains(s.editorTaskTypes(), taskType) {
		need = models.RoleEditor
	}
	e := forbidden("role %s may not change what a %q task runs; that needs role %s", p.Role, taskType, need)
	e.Field = field
	return e
}

// mayUseDefinition checks a definition a request body names (a schedule's,
// a run's): in p's scope, and when the request changes what it runs
// (changes), of a task type p's role may edit. Out of scope it is
// answered as missing, in field.
func (s *Server) mayUseDefinition(r *http.Request, d *models.JobDefinition, field string, changes bool) *apiError {
	p := PrincipalOf(r.Context())
	if d == nil || p == nil {
		return nil
	}
	if !inScope(p, d.Name) {
		return badRequest(field, "job definition %d does not exist", d.ID)
	}
	if changes {
		return s.mayEditTask(p, d.TaskType, field)
	}
	return nil
}

// mayNameDefinition checks the name and task type of a definition p
// creates or changes.
func (s *Server) mayNameDefinition(r *http.Request, d *models.JobDefinition) *apiError {
	p := PrincipalOf(r.Context())
	if p == nil {
		return nil
	}
	if !inScope(p, d.Name) {
		e := forbidden("a token scoped to %q may only name definitions %q…", p.Scope, p.Scope)
		e.Field = "name"
		return e
	}
	return s.mayEditTask(p, d.TaskType, "task_type")
}

// scopeList narrows a list to p's scope.
func scopeList(r *http.Request, p *chimedb.AdminListParams) {
	if pr := PrincipalOf(r.Context()); pr != nil {
		p.DefinitionPrefix = pr.Scope
	}
}
