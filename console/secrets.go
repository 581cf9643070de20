package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/chimesched/chime/api"
)

// secretsData is the secrets page: names and dates only. The API answers
// nothing more, and the form never shows a value back, even after a
// refusal.
type secretsData struct {
	Secrets []api.SecretView
	// Name is the name of a refused form, shown again; never its value.
	Name string
}

// secrets lists the secrets, for admins (the API refuses the others, and
// the page says so), with a form to set one.
func (c *Console) secrets(w http.ResponseWriter, r *http.Request, s *session) {
	c.secretsPage(w, r, s, http.StatusOK, "", "")
}

func (c *Console) secretsPage(w http.ResponseWriter, r *http.Request, s *session, status int, name, fail string) {
	res := c.callAPI(r.Context(), http.MethodGet, api.Prefix+"/secrets", nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	var list api.List[api.SecretView]
	if err := json.Unmarshal(res.Body, &list); err != nil {
		c.fail(w, r, s, http.StatusInternalServerError, "The list of secrets could not be read.")
		return
	}
	c.render(w, status, "secrets", &page{Title: "Secrets", Nav: "secrets", Session: s, Error: fail,
		Flash: doneWords[r.URL.Query().Get("done")], Data: secretsData{Secrets: list.Items, Name: name}})
}

// setSecret sends the form to POST /api/v1/secrets. A refusal shows the
// page again with the API's reason and the name, never the value.
func (c *Console) setSecret(w http.ResponseWriter, r *http.Request, s *session) {
	// A browser sends a textarea's lines ended by CRLF (HTML's form
	// encoding); a value typed on several lines means LF, as a PEM key
	// does. Exact bytes go through the CLI or the API.
	name, value := r.PostFormValue("name"), strings.ReplaceAll(r.PostFormValue("value"), "\r\n", "\n")
	res := c.callAPI(r.Context(), http.MethodPost, api.Prefix+"/secrets", map[string]string{"name": name, "value": value})
	if !res.ok() {
		c.secretsPage(w, r, s, res.Status, name, res.Err)
		return
	}
	http.Redirect(w, r, "/secrets?done=saved", http.StatusSeeOther)
}

func (c *Console) deleteSecret(w http.ResponseWriter, r *http.Request, s *session) {
	// The name is a form field, not a path segment: it may hold a '/'.
	res := c.callAPI(r.Context(), http.MethodDelete, api.Prefix+"/secrets/"+url.PathEscape(r.PostFormValue("name")), nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	http.Redirect(w, r, "/secrets?done=deleted", http.StatusSeeOther)
}
