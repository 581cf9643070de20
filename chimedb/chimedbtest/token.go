package chimedbtest

import (
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// tokenMethods are the API tokens of AdminQueries, and the token scope
// (AdminListParams.DefinitionPrefix) across the lists.
func tokenMethods() []method {
	return []method{
		{"AdminQueries.CreateToken", createTokenCases},
		{"AdminQueries.ListTokens", listTokensCases},
		{"AdminQueries.TokenByHash", tokenByHashCases},
		{"AdminQueries.RevokeToken", revokeTokenCases},
		{"DefinitionPrefix", definitionPrefixCases},
	}
}

func init() { properties["DefinitionPrefix"] = true }

func (e *env) token(name string, role models.Role, mods ...func(t *models.APIToken)) *models.APIToken {
	e.t.Helper()
	t := &models.APIToken{Name: name, TokenSHA256: fmt.Sprintf("%064x", e.n+len(name)*1000), Role: role}
	e.n++
	for _, m := range mods {
		m(t)
	}
	require.NoError(e.t, e.admin.CreateToken(e.ctx, t))
	return t
}

var createTokenCases = []tcase{
	{"inserts the row with its id and created_at; a taken name or hash is ErrConflict", func(e *env) {
		exp := odd(e.now().Add(time.Hour))
		t := e.token("ci", models.RoleOperator, func(t *models.APIToken) { t.Scope, t.ExpiresAt = "finance.", &exp })
		require.Positive(e.t, t.ID)
		require.False(e.t, t.CreatedAt.IsZero())
		got, err := e.admin.TokenByHash(e.ctx, t.TokenSHA256)
		require.NoError(e.t, err)
		require.Equal(e.t, "ci", got.Name)
		require.Equal(e.t, models.RoleOperator, got.Role)
		require.Equal(e.t, "finance.", got.Scope)
		require.NotNil(e.t, got.ExpiresAt)
		require.True(e.t, got.ExpiresAt.Equal(chimedb.DBTime(exp)), "expires_at kept to the microsecond: %v", got.ExpiresAt)
		require.Nil(e.t, got.RevokedAt)
		err = e.admin.CreateToken(e.ctx, &models.APIToken{Name: "ci", TokenSHA256: fmt.Sprintf("%064x", 999999), Role: models.RoleViewer})
		require.ErrorIs(e.t, err, chimedb.ErrConflict)
		err = e.admin.CreateToken(e.ctx, &models.APIToken{Name: "other", TokenSHA256: t.TokenSHA256, Role: models.RoleViewer})
		require.ErrorIs(e.t, err, chimedb.ErrConflict)
	}},
}

var listTokensCases = []tcase{
	{"lists every token by name, revoked ones too", func(e *env) {
		got, err := e.admin.ListTokens(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		e.token("b", models.RoleViewer)
		e.token("a", models.RoleAdmin)
		_, err = e.admin.RevokeToken(e.ctx, "b", e.now())
		require.NoError(e.t, err)
		got, err = e.admin.ListTokens(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		require.Equal(e.t, "a", got[0].Name)
		require.Equal(e.t, "b", got[1].Name)
		require.NotNil(e.t, got[1].RevokedAt)
	}},
}

var tokenByHashCases = []tcase{
	{"finds only the exact hash; another is ErrNotFound", func(e *env) {
		t := e.token("x", models.RoleEditor)
		got, err := e.admin.TokenByHash(e.ctx, t.TokenSHA256)
		require.NoError(e.t, err)
		require.Equal(e.t, t.ID, got.ID)
		_, err = e.admin.TokenByHash(e.ctx, fmt.Sprintf("%064x", 424242))
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		_, err = e.admin.TokenByHash(e.ctx, "")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
	{"a row written with plain SQL is read", func(e *env) {
		e.exec("INSERT INTO api_tokens (name, token_sha256, role, scope) VALUES (?, ?, ?, ?)", "sql", "ab", "viewer", "hr.")
		got, err := e.admin.TokenByHash(e.ctx, "ab")
		require.NoError(e.t, err)
		require.Equal(e.t, "hr.", got.Scope)
		require.False(e.t, got.CreatedAt.IsZero(), "created_at has its default")
	}},
}

var revokeTokenCases = []tcase{
	{"sets revoked_at once; an unknown name is ErrNotFound", func(e *env) {
		e.token("r", models.RoleViewer)
		at := chimedb.DBTime(e.now())
		got, err := e.admin.RevokeToken(e.ctx, "r", at)
		require.NoError(e.t, err)
		require.NotNil(e.t, got.RevokedAt)
		require.True(e.t, got.RevokedAt.Equal(at))
		again, err := e.admin.RevokeToken(e.ctx, "r", at.Add(time.Hour))
		require.NoError(e.t, err)
		require.True(e.t, again.RevokedAt.Equal(at), "the first revocation stays")
		_, err = e.admin.RevokeToken(e.ctx, "nobody", at)
		require.True(e.t, errors.Is(err, chimedb.ErrNotFound), "%v", err)
	}},
}

var definitionPrefixCases = []tcase{
	{"keeps the definitions named with the prefix, taken literally, and their schedules, jobs and notifications", func(e *env) {
		fin := e.definition(func(d *models.JobDefinition) { d.Name = "finance.close" })
		hr := e.definition(func(d *models.JobDefinition) { d.Name = "hr.payroll" })
		// % and _ are not wildcards: "fin%" must not match "finance.".
		lit := e.definition(func(d *models.JobDefinition) { d.Name = "finXance.x" })
		sf, sh := e.schedule(fin.ID), e.schedule(hr.ID)
		e.schedule(lit.ID)
		jf, jh := e.job(fin.ID), e.job(hr.ID)
		for _, j := range []*models.Job{jf, jh} {
			e.exec("INSERT INTO notifications (job_id, job_status, attempt, recipients) VALUES (?, ?, ?, ?)", j.ID, "failed", 1, "x@example.com")
		}
		for _, prefix := range []string{"finance.", "finance_", "fin%"} {
			p := &chimedb.AdminListParams{Limit: 10, DefinitionPrefix: prefix}
			defs, err := e.admin.ListDefinitions(e.ctx, p)
			require.NoError(e.t, err)
			scheds, err := e.admin.ListSchedules(e.ctx, p)
			require.NoError(e.t, err)
			jobs, err := e.admin.ListJobs(e.ctx, p)
			require.NoError(e.t, err)
			notes, err := e.admin.ListNotifications(e.ctx, p, 0)
			require.NoError(e.t, err)
			if prefix != "finance." {
				require.Empty(e.t, defs, prefix)
				require.Empty(e.t, scheds, prefix)
				require.Empty(e.t, jobs, prefix)
				require.Empty(e.t, notes, prefix)
				continue
			}
			require.Len(e.t, defs, 1)
			require.Equal(e.t, fin.ID, defs[0].ID)
			require.Len(e.t, scheds, 1)
			require.Equal(e.t, sf.ID, scheds[0].ID)
			require.Len(e.t, jobs, 1)
			require.Equal(e.t, jf.ID, jobs[0].ID)
			require.Len(e.t, notes, 1)
			require.Equal(e.t, jf.ID, notes[0].JobID)
		}
		all, err := e.admin.ListSchedules(e.ctx, &chimedb.AdminListParams{Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, all, 3, "no prefix: every schedule")
		_ = sh
	}},
}
