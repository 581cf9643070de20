package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGrid: every combination of the lists, claim-min capped to the
// batch and the pool (and the repeats this makes dropped), and the lists
// checked.
func TestGrid(t *testing.T) {
	o := options{driver: "mysql", pool: 100, claimers: "1,2", claimBatch: "50, 200", claimMin: "1,100", completers: "1",
		completeBatch: "250", floor: "true", form: "tx", triggers: "false,true"}
	g, err := o.grid()
	require.NoError(t, err)
	require.Len(t, g, 2*2*2*2)
	require.Equal(t, knobs{1, 50, 1, 1, 250, true, "tx", false, false}, g[0])
	require.Equal(t, knobs{1, 50, 50, 1, 250, true, "tx", false, false}, g[2], "claim-min 100 is capped to the batch")
	require.Equal(t, knobs{1, 200, 100, 1, 250, true, "tx", false, false}, g[6], "and to the pool")

	o.claimMin = "50,60"
	o.claimBatch = "50"
	g, err = o.grid()
	require.NoError(t, err)
	require.Len(t, g, 2*2, "claim-min 50 and 60 are both 50 with a batch of 50")

	for _, bad := range []func(o *options){
		func(o *options) { o.claimers = "0" },
		func(o *options) { o.claimBatch = "x" },
		func(o *options) { o.floor = "maybe" },
		func(o *options) { o.form = "stmt" }, // PostgreSQL only
	} {
		o := o
		bad(&o)
		_, err := o.grid()
		require.Error(t, err)
	}
	o.driver, o.form = "postgres", "tx,stmt"
	g, err = o.grid()
	require.NoError(t, err)
	require.Len(t, g, 2*2*2)
}

// TestServerDSN: each run's database replaces the DSN's, which is only a
// prefix; the rest of the DSN is kept.
func TestServerDSN(t *testing.T) {
	s, err := newServer("mysql", "u:p@tcp(db:3306)/pre?timeout=2s")
	require.NoError(t, err)
	require.Equal(t, "pre", s.prefix)
	require.Equal(t, "u:p@tcp(db:3306)/pre_1_2?timeout=2s", s.dsnFor("pre_1_2"))
	s, err = newServer("postgres", "postgres://u@db:5432/pre?sslmode=disable")
	require.NoError(t, err)
	require.Equal(t, "postgres://u@db:5432/pre_1_2?sslmode=disable", s.dsnFor("pre_1_2"))
	s, err = newServer("postgres", "")
	require.NoError(t, err)
	require.Equal(t, "chime_ceiling", s.prefix)
	_, err = newServer("postgres", "host=db user=u")
	require.Error(t, err)
	_, err = newServer("sqlite", "x.db")
	require.Error(t, err)
}
