package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// BenchmarkAuditTriggers measures what the audit triggers add, on each
// database: a claim's write of a queue's rate-limit clock (the trigger
// fires and writes nothing), and a marked definition update (one audit
// row). "without" drops the table's audit triggers first.
//
//	go test -run '^$' -bench BenchmarkAuditTriggers -benchtime 2000x ./store/
func BenchmarkAuditTriggers(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			for _, with := range []bool{true, false} {
				name := "with"
				if !with {
					name = "without"
				}
				b.Run(name, func(b *testing.B) { benchAudit(b, d, with) })
			}
		})
	}
}

func benchAudit(b *testing.B, d store.Dialect, with bool) {
	st := testdb.Open(b, d)
	db := st.DB()
	if !with {
		for _, t := range []string{"queues", "job_definitions"} {
			switch d {
			case store.Postgres:
				require.NoError(b, db.Exec("DROP TRIGGER chime_audit ON "+t).Error)
			default:
				for _, op := range []string{"insert", "update", "delete"} {
					require.NoError(b, db.Exec("DROP TRIGGER chime_audit_"+t+"_"+op).Error)
				}
			}
		}
	}
	ctx := chimedb.WithActor(context.Background(), chimedb.Actor{Name: "bench", Door: models.AuditDoorAPI})
	def := testdb.Definition(b, st, &testdb.DefinitionOpts{Name: "bench"})
	b.Run("rate_clock", func(b *testing.B) {
		for i := range b.N {
			require.NoError(b, db.Exec("UPDATE queues SET rate_tat_us = ? WHERE name = 'default'", i).Error)
		}
	})
	b.Run("definition_update", func(b *testing.B) {
		for i := range b.N {
			def.Description = string(rune('a' + i%26))
			require.NoError(b, st.Admin().UpdateDefinition(ctx, &def))
		}
	})
}
