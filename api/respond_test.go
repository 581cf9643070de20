package api

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestAnswerThatCannotBeEncoded: an answer that fails to encode is a 500
// with an error body and a logged cause, not a 200 with an empty body.
func TestAnswerThatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	log, hook := test.NewNullLogger()
	b := setupWith(t, testdb.Open(t, store.SQLite), func(c *Config) { c.Logger = log })
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/jobs", nil)
	b.srv.writeJSON(rec, req, 200, map[string]float64{"x": math.NaN()})
	require.Equal(t, 500, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var e Error
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), rec.Body.String())
	require.Contains(t, e.Error, "see the server log")
	entry := hook.LastEntry()
	require.NotNil(t, entry)
	require.Equal(t, logrus.ErrorLevel, entry.Level)
	require.Equal(t, "/api/v1/jobs", entry.Data["path"])
	require.Contains(t, entry.Data[logrus.ErrorKey].(error).Error(), "NaN")
}
