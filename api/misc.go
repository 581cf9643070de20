package api

import (
	_ "embed"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/validate"
)

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3 document served at /api/v1/openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) *apiError {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
	return nil
}

// listNodes lists every node of the cluster. There are few, so there is
// one page and next_cursor is always empty.
func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) *apiError {
	for name := range r.URL.Query() {
		return badRequest(name, "unknown query parameter %q; nodes takes none", name)
	}
	nodes, err := s.st.Admin().ListNodes(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a node")
	}
	if nodes == nil {
		nodes = []models.Node{}
	}
	s.writeJSON(w, r, http.StatusOK, List[models.Node]{Items: nodes})
	return nil
}

// listConfigurations lists every setting, by name, in one page. Secrets
// are shown as configs.Redacted: they can be set here, never read back.
func (s *Server) listConfigurations(w http.ResponseWriter, r *http.Request) *apiError {
	for name := range r.URL.Query() {
		return badRequest(name, "unknown query parameter %q; configurations takes none", name)
	}
	items, err := s.st.Admin().ListConfigurations(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a configuration")
	}
	if items == nil {
		items = []models.Configuration{}
	}
	for i := range items {
		redact(&items[i])
	}
	s.writeJSON(w, r, http.StatusOK, List[models.Configuration]{Items: items})
	return nil
}

func redact(c *models.Configuration) {
	c.Value = configs.RedactValue(c.Name, c.Value)
}

func configName(r *http.Request) (string, *apiError) {
	name := r.PathValue("name")
	switch {
	case strings.TrimSpace(name) == "":
		return "", badRequest("name", "configuration name is required")
	case !utf8.ValidString(name):
		// PostgreSQL refuses it in a comparison: a 500 there.
		return "", badRequest("name", "configuration name is not valid UTF-8")
	case utf8.RuneCountInString(name) > validate.MaxName:
		return "", badRequest("name", "configuration name is longer than %d characters", validate.MaxName)
	case strings.IndexFunc(name, unicode.IsSpace) >= 0 || strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", badRequest("name", "configuration name must not contain white space or control characters")
	}
	return name, nil
}

func (s *Server) getConfiguration(w http.ResponseWriter, r *http.Request) *apiError {
	name, e := configName(r)
	if e != nil {
		return e
	}
	c, err := s.st.Admin().GetConfiguration(r.Context(), name)
	if err != nil {
		return s.fromStore(r, err, "a configuration")
	}
	redact(c)
	s.writeJSON(w, r, http.StatusOK, c)
	return nil
}

// setConfiguration creates or replaces a setting. value is required;
// description keeps its stored text when left out.
func (s *Server) setConfiguration(w http.ResponseWriter, r *http.Request) *apiError {
	name, e := configName(r)
	if e != nil {
		return e
	}
	var req configurationRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if req.Value == nil {
		return badRequest("value", "value is required")
	}
	if len(*req.Value) > validate.MaxConfigValue {
		return badRequest("value", "value is longer than %d bytes", validate.MaxConfigValue)
	}
	if req.Description != nil && utf8.RuneCountInString(*req.Description) > validate.MaxDescription {
		return badRequest("description", "description is longer than %d characters", validate.MaxDescription)
	}
	admin := s.st.Admin()
	rows, err := admin.ListConfigurations(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a configuration")
	}
	if e := s.checkSetting(rows, name, *req.Value); e != nil {
		return e
	}
	c := &models.Configuration{Name: name, Value: *req.Value}
	if req.Description != nil {
		c.Description = *req.Description
	} else if cur, err := admin.GetConfiguration(r.Context(), name); err == nil {
		c.Description = cur.Description
	}
	if err := admin.SetConfiguration(r.Context(), c); err != nil {
		return s.fromStore(r, err, "a configuration")
	}
	redact(c)
	s.writeJSON(w, r, http.StatusOK, c)
	return nil
}

// checkSetting refuses a row every node would refuse when it reads the
// table (which it would log and ignore): an unknown key, a key only the
// file or environment may set, or a value that does not pass start-up
// validation on top of this node's file and environment and the other
// rows. A refused key is a fault of the path's name; a refused value, of
// the body's value. Messages never show a secret's value.
func (s *Server) checkSetting(rows []models.Configuration, name, value string) *apiError {
	others := make(map[string]string, len(rows))
	for _, row := range rows {
		if row.Name != name {
			others[row.Name] = row.Value
		}
	}
	// Rows the nodes refuse are left out here as they are there.
	withRows, _ := s.cfg.Settings.WithSettings(others)
	if err := withRows.CheckSetting(name, value); err != nil {
		field := "value"
		if err.Unknown || configs.IsFileOnly(err.Key) {
			field = "name"
		}
		return badRequest(field, "%v", err)
	}
	return nil
}

func (s *Server) drainNode(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setNodeDrain(w, r, true)
}

func (s *Server) undrainNode(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setNodeDrain(w, r, false)
}

// setNodeDrain asks a node to stop claiming (it finishes what it runs,
// or hands it back after its taskengine.drain_timeout) or to claim again.
// The node acts on its row within one cluster.heartbeat, whichever node
// served the request.
func (s *Server) setNodeDrain(w http.ResponseWriter, r *http.Request, drain bool) *apiError {
	id := r.PathValue("node")
	if id == "" || len(id) > maxNodeIDLen {
		return badRequest("node", "a node id is 1 to %d characters", maxNodeIDLen)
	}
	n, err := s.st.Admin().SetNodeDrain(r.Context(), id, drain)
	if err != nil {
		return s.fromStore(r, err, "a node")
	}
	s.writeJSON(w, r, http.StatusOK, n)
	return nil
}

// maxNodeIDLen is nodes.id's width.
const maxNodeIDLen = 191
