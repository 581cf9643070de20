package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/store"
)

// SQLite's one writer would be held by a batch prepared ahead, so the
// embedded database never gets the lead whatever the setting says.
func TestFireAheadOffOnSQLite(t *testing.T) {
	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, 200*time.Millisecond, fireAhead(store.MySQL, cfg))
	require.Equal(t, 200*time.Millisecond, fireAhead(store.Postgres, cfg))
	require.Zero(t, fireAhead(store.SQLite, cfg))
}
