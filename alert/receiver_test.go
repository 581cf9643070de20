package alert_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/chimesched/chime/alert"
)

// schema is docs/alerts.schema.json, the payload's documented schema.
type schema struct {
	Type                 string             `json:"type"`
	Enum                 []any              `json:"enum"`
	Required             []string           `json:"required"`
	Properties           map[string]*schema `json:"properties"`
	AdditionalProperties *bool              `json:"additionalProperties"`
	Ref                  string             `json:"$ref"`
	Format               string             `json:"format"`
	Defs                 map[string]*schema `json:"$defs"`
}

func loadSchema(t *testing.T) *schema {
	t.Helper()
	raw, err := os.ReadFile("../docs/alerts.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// validate checks v (decoded JSON) against s: the keywords the document
// uses (type, enum, required, properties, additionalProperties, $ref to
// $defs, format date-time).
func (root *schema) validate(s *schema, v any, at string) error {
	if s.Ref != "" {
		s = root.Defs[s.Ref[len("#/$defs/"):]]
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", at)
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: %s is required", at, r)
			}
		}
		for k, x := range m {
			ps, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return fmt.Errorf("%s: %s is not in the schema", at, k)
				}
				continue
			}
			if err := root.validate(ps, x, at+"."+k); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: not a string", at)
		}
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: not an integer", at)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: not a boolean", at)
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, s.Enum)
	}
	return nil
}

// receiver is a webhook receiver on loopback that does what docs/alerts.md
// tells receivers to: verify the signature (refusing stale timestamps),
// then read the payload; it also validates it against the schema.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	key    []byte
	clock  clockwork.Clock
	schema *schema

	mu       sync.Mutex
	got      []alert.Payload
	bodies   [][]byte
	headers  []http.Header
	problems []string
	fail     int // answer 503 to this many requests first
}

func newReceiver(t *testing.T, key string, clock clockwork.Clock) *receiver {
	r := &receiver{t: t, key: []byte(key), clock: clock, schema: loadSchema(t)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	r.headers = append(r.headers, req.Header.Clone())
	r.bodies = append(r.bodies, body)
	if len(r.key) > 0 {
		if err := alert.Verify(r.key, req.Header.Get("X-Chime-Timestamp"), req.Header.Get("X-Chime-Signature"), body,
			r.clock.Now(), 5*time.Minute); err != nil {
			r.problems = append(r.problems, "signature: "+err.Error())
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		r.problems = append(r.problems, "json: "+err.Error())
	} else if err := r.schema.validate(r.schema, v, "payload"); err != nil {
		r.problems = append(r.problems, "schema: "+err.Error()+": "+string(body))
	}
	var p alert.Payload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		r.problems = append(r.problems, "decode: "+err.Error())
	}
	r.got = append(r.got, p)
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) payloads() []alert.Payload {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) > 0 {
		r.t.Fatalf("the receiver refused: %v", r.problems)
	}
	return slices.Clone(r.got)
}

// events is the events and states received, sorted.
func (r *receiver) events() []string {
	var out []string
	for _, p := range r.payloads() {
		out = append(out, string(p.Event)+"/"+string(p.State))
	}
	sort.Strings(out)
	return out
}
