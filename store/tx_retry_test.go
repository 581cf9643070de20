package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestInTxCountsDeadlockRetries makes two transactions take two rows in
// opposite orders, a real deadlock on the server: the database aborts one,
// InTx runs it again, both commit, and the retry reaches OnTxRetry as
// "deadlock". Before, the retry happened in silence, which hid a lock-order
// bug in the claim for a whole round.
func TestInTxCountsDeadlockRetries(t *testing.T) {
	for _, d := range testdb.ServerDialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := testdb.Config(t, d)
			var deadlocks atomic.Int32
			cfg.OnTxRetry = func(reason string) {
				if reason == "deadlock" {
					deadlocks.Add(1)
				}
			}
			ctx := context.Background()
			st, err := store.Open(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			db := st.DB()
			if err := db.Exec("CREATE TABLE deadlock_probe (id INT PRIMARY KEY, v INT NOT NULL)").Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Exec("INSERT INTO deadlock_probe (id, v) VALUES (1, 0), (2, 0)").Error; err != nil {
				t.Fatal(err)
			}
			// Each transaction locks its first row, then waits until the
			// other holds its own before asking for the second: on the
			// first run they deadlock for sure; a rerun passes at once.
			var both sync.WaitGroup
			both.Add(2)
			var once [2]sync.Once
			run := func(i, first, second int) error {
				return st.InTx(ctx, func(tx *gorm.DB) error {
					if err := tx.Exec("UPDATE deadlock_probe SET v = v + 1 WHERE id = ?", first).Error; err != nil {
						return err
					}
					once[i].Do(func() { both.Done(); both.Wait() })
					return tx.Exec("UPDATE deadlock_probe SET v = v + 1 WHERE id = ?", second).Error
				})
			}
			errs := make(chan error, 2)
			go func() { errs <- run(0, 1, 2) }()
			go func() { errs <- run(1, 2, 1) }()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatalf("a transaction failed instead of being run again: %v", err)
				}
			}
			var sum int
			if err := db.Raw("SELECT SUM(v) FROM deadlock_probe").Scan(&sum).Error; err != nil {
				t.Fatal(err)
			}
			if sum != 4 {
				t.Errorf("sum of v = %d, want 4: each transaction's two updates once", sum)
			}
			if deadlocks.Load() == 0 {
				t.Error("OnTxRetry was not told of the deadlock")
			}
		})
	}
}
