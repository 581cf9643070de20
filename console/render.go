package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
)

// page is what every template gets.
type page struct {
	Title string
	// Nav is the section the page belongs to, to mark its link.
	Nav     string
	Session *session
	// Flash is a message about the last action; Error one about a failure.
	Flash, Error string
	Version      string
	// TokenFile is Config.TokenFile, for the login page's hint.
	TokenFile string
	Data      any
}

var funcs = template.FuncMap{
	"time":        timeTag,
	"ago":         ago,
	"status":      statusWords,
	"jobStatus":   jobStatusWords,
	"json":        prettyJSON,
	"deref":       func(s *string) string { return derefStr(s) },
	"derefInt":    func(p *int) string { return derefInt(p) },
	"add":         func(a, b int) int { return a + b },
	"query":       queryWith,
	"specWords":   specWords,
	"barHeight":   barHeight,
	"mul":         func(a, b int) int { return a * b },
	"stateHelp":   stateHelp,
	"params":      maskedJSON,
	"plural":      plural,
	"finished":    func(j models.Job) bool { return j.Status.Finished() },
	"fieldError":  func(errs map[string]string, f string) string { return errs[f] },
	"hasPrefix":   strings.HasPrefix,
	"int64":       func(i int64) string { return strconv.FormatInt(i, 10) },
	"scheduleOK":  func(s models.ScheduleStatus) bool { return s == models.ScheduleActive || s == models.SchedulePaused },
	"orDash":      orDash,
	"scheduleRef": func(id *int64) int64 { return derefID(id) },
	"dict3":       func(name, label string, f *form) fieldArgs { return fieldArgs{name, label, f} },
	"dictRuns":    func(runs []models.WorkflowRun, names map[int64]string) runsArgs { return runsArgs{runs, names} },
	"namesOf":     func(id int64, name string) map[int64]string { return map[int64]string{id: name} },
	"derefInt64":  func(p *int64) string { return strconv.FormatInt(*p, 10) },
}

// runsArgs is what the runs table template gets.
type runsArgs struct {
	Runs  []models.WorkflowRun
	Names map[int64]string
}

// fieldArgs is what the field templates get.
type fieldArgs struct {
	Name, Label string
	F           *form
}

func parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/fields.html", "templates/flowgraph.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "fields" || name == "flowgraph" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		out[name] = t
	}
	return out, nil
}

// render executes a page into a buffer first, so a template error is a
// clean 500 instead of half a page.
func (c *Console) render(w http.ResponseWriter, status int, name string, p *page) {
	p.Version, p.TokenFile = c.cfg.Version, c.cfg.TokenFile
	var buf bytes.Buffer
	t := c.pages[name]
	if t == nil {
		c.log.WithField("page", name).Error("console: no such template")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.log.WithError(err).WithField("page", name).Error("console: render")
		http.Error(w, "internal error while rendering the page; see the server log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail shows a message page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.render(w, status, "message", &page{Title: http.StatusText(status), Session: s, Error: msg, Data: r.Referer()})
}

// dbFail logs a database error and shows a page that does not leak it.
func (c *Console) dbFail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	c.log.WithError(err).WithField("path", r.URL.Path).Error("console: database error")
	c.fail(w, r, s, http.StatusInternalServerError, "The database could not be read; see the server log.")
}

// timeTag shows t in UTC; app.js rewrites the text into the browser's
// zone and keeps UTC in the title, shown on hover.
func timeTag(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "—"
		}
		t = *x
	default:
		return ""
	}
	if t.IsZero() {
		return "—"
	}
	u := t.UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		u.Format(time.RFC3339Nano), u.Format("2006-01-02 15:04:05 UTC"), u.Format("2006-01-02 15:04:05 UTC")))
}

// ago is a duration in words: "4s", "3m 2s", "5h 1m", "2d 3h".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// prettyJSON indents a stored JSON document for reading; a value that is
// not JSON is shown as it is (still escaped by the template).
func prettyJSON(j models.JSON) string {
	if len(j) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, j, "", "  "); err != nil {
		return string(j)
	}
	return b.String()
}

// maskedJSON is prettyJSON of params with secrets masked as the API masks
// settings (configs.Redacted): the value of a key that names a credential
// at any depth (a password, token or secret, as configs.IsSecret judges
// names, an Authorization header, an API key), and the password of a URL.
// Keys come out sorted. A value that is not JSON is shown as it is.
func maskedJSON(j models.JSON) string {
	if len(j) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return prettyJSON(j)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the template escapes
	enc.SetIndent("", "  ")
	if err := enc.Encode(mask(v)); err != nil {
		return prettyJSON(j)
	}
	return strings.TrimRight(b.String(), "\n")
}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey(k) && e != nil && e != "" {
				x[k] = configs.Redacted
			} else {
				x[k] = mask(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = mask(e)
		}
	case string:
		if strings.Contains(x, "@") {
			if u, err := url.Parse(x); err == nil && u.User != nil {
				if _, ok := u.User.Password(); ok {
					return u.Redacted()
				}
			}
		}
	}
	return v
}

func secretKey(k string) bool {
	l := strings.ToLower(k)
	return configs.IsSecret(k) || strings.Contains(l, "authorization") || strings.Contains(l, "apikey") ||
		strings.Contains(l, "api_key") || strings.Contains(l, "api-key")
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func derefID(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// queryWith returns the query string q with key set to value (removed when
// empty), and the cursor dropped unless it is the key: a new filter starts
// at the first page.
func queryWith(q url.Values, key, value string) string {
	out := url.Values{}
	for k, v := range q {
		if k != "cursor" && k != key {
			out[k] = v
		}
	}
	if value != "" {
		out.Set(key, value)
	}
	if len(out) == 0 {
		return "?"
	}
	return "?" + out.Encode()
}

// barHeight scales n to a bar of at most h pixels.
func barHeight(n, maxN int64, h int) int {
	if maxN <= 0 || n <= 0 {
		return 0
	}
	return max(int(int64(h)*n/maxN), 1)
}
