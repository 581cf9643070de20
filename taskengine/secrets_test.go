package taskengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// echoTask says its param v everywhere a task can: a log line (and a
// field), its result and, when fail is set, its error.
type echoTask struct{ tasks.Base }

func (*echoTask) Execute(_ context.Context, job *tasks.Job) error {
	var p struct {
		V    string `json:"v"`
		Fail bool   `json:"fail"`
	}
	if err := job.Bind(&p); err != nil {
		return err
	}
	job.Log().WithField("echo", p.V).Info("the value is " + p.V)
	job.SetResult("result: " + p.V + " secret_params=" + strconv.FormatBool(job.SecretParams))
	if p.Fail {
		return errors.New("failed with " + p.V)
	}
	return nil
}

const testSecretValue = "s3cr3t-value\nsecond line\x00after NUL"

func secretSource(t *testing.T, st *store.Store) *secrets.Source {
	t.Helper()
	kr, err := secrets.NewKeyring(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, secrets.KeySize)), nil)
	require.NoError(t, err)
	sealed, err := kr.Seal("erp", []byte(testSecretValue))
	require.NoError(t, err)
	_, err = st.Admin().PutSecret(t.Context(), &models.Secret{Name: "erp", Ciphertext: sealed.Ciphertext, Nonce: sealed.Nonce, KeyID: sealed.KeyID})
	require.NoError(t, err)
	return &secrets.Source{St: st.Admin(), Keys: kr}
}

// TestSecretsResolvedOnTheWorker: a reference is resolved just before
// Execute, jobs.params keeps the reference, and the value is masked in the
// job's log lines, result and error. A reference to a missing secret, or
// a node without a key, fails the job at its first attempt, with an error
// naming the secret: no retry storm.
func TestSecretsResolvedOnTheWorker(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = testRegistry()
		cfg.Registry.MustRegister("echo", func() tasks.Task { return &echoTask{} })
		cfg.Secrets = secretSource(t, st)
		e := startEngine(t, st, cfg)

		job := func(name, params string) int64 {
			return adHocJob(t, st, &testdb.DefinitionOpts{Name: name, TaskType: "echo", DefaultParams: params, MaxAttempts: 3})
		}
		ok := job("ok", `{"v":{"$secret":"erp"}}`)
		plain := job("plain", `{"v":"no secret"}`)
		bad := job("bad", `{"v":{"$secret":"erp"},"fail":true}`)
		missing := job("missing", `{"v":{"$secret":"nope"}}`)

		j := waitOutcome(t, e, st, ok, models.JobSucceeded)
		require.Equal(t, "result: ******** secret_params=true", deref(j.Result), "the task is told its params hold a secret")
		require.Equal(t, "result: no secret secret_params=false", deref(waitOutcome(t, e, st, plain, models.JobSucceeded).Result))
		var stored string
		require.NoError(t, db.Raw("SELECT default_params FROM job_definitions WHERE id = ?", j.JobDefinitionID).Scan(&stored).Error)
		require.Contains(t, stored, `"$secret"`, "the row keeps the reference")
		j = waitOutcome(t, e, st, bad, models.JobPending)
		require.Equal(t, "failed with ********", deref(j.Error))
		requireLog(t, db, bad, "the value is ******** echo=********")
		j = waitOutcome(t, e, st, missing, models.JobFailed)
		require.Equal(t, 1, j.Attempt, "not retried though 3 attempts were allowed")
		require.Equal(t, models.OutcomeSkipRetry, j.Outcome)
		require.Contains(t, deref(j.Error), `secret does not exist: "nope"`)
		requireLog(t, db, missing, "not retried: no attempt can succeed")

		var all []string
		require.NoError(t, db.Raw("SELECT message FROM job_logs").Scan(&all).Error)
		for _, l := range append(all, deref(j.Result), deref(j.Error)) {
			for _, part := range []string{"s3cr3t-value", "second line", "after NUL"} {
				require.NotContains(t, l, part)
			}
		}
	})
}

// TestSecretsWithoutKey: a worker without a key fails the job at once and
// says how to configure one.
func TestSecretsWithoutKey(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	cfg := testConfig(t, nodeName(t))
	cfg.Registry = testRegistry()
	cfg.Registry.MustRegister("echo", func() tasks.Task { return &echoTask{} })
	e := startEngine(t, st, cfg)
	id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "nokey", TaskType: "echo", DefaultParams: `{"v":{"$secret":"erp"}}`, MaxAttempts: 5})
	j := waitOutcome(t, e, st, id, models.JobFailed)
	require.Equal(t, 1, j.Attempt)
	require.True(t, strings.Contains(deref(j.Error), "CHIME_SECRETS_KEY"), deref(j.Error))
}
