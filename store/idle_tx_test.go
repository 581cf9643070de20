package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// A transaction left idle (its node frozen or cut off between statements,
// say while a fire prepared ahead waits for its instant) must not keep its
// row locks until the TCP connection dies: the server rolls it back after
// IdleTxTimeout and the writer waiting on its rows goes on.
func TestIdleTransactionIsRolledBack(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.ServerDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testdb.Config(t, d)
			cfg.IdleTxTimeout = time.Second
			ctx := context.Background()
			st, err := store.Open(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			db := st.SQL()
			_, err = db.ExecContext(ctx, "CREATE TABLE idle_probe (id INT PRIMARY KEY, v INT NOT NULL)")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO idle_probe (id, v) VALUES (1, 0)")
			require.NoError(t, err)

			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			var v int
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT v FROM idle_probe WHERE id = 1 FOR UPDATE").Scan(&v))
			_, err = tx.ExecContext(ctx, "UPDATE idle_probe SET v = 1 WHERE id = 1")
			require.NoError(t, err)

			// Another session's write waits on the row, and gets it once
			// the server has given up on the idle transaction.
			wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_, err = db.ExecContext(wctx, "UPDATE idle_probe SET v = 2 WHERE id = 1")
			require.NoError(t, err, "the idle transaction still held the row")
			require.Error(t, tx.Commit(), "the idle transaction must have been rolled back")
			require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM idle_probe WHERE id = 1").Scan(&v))
			require.Equal(t, 2, v)
		})
	}
}
