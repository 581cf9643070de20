package app

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A port in use or a bad api.addr stops the node before it joins the
// cluster: no nodes row is written, no lease taken, no job claimed.
func TestServeChecksTheAPIAddressBeforeJoining(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = busy.Close() })
		for _, c := range []struct{ addr, want string }{
			{busy.Addr().String(), "address already in use"},
			{"127.0.0.1", "missing port"},
			{"256.1.1.1:80", "api.addr"},
		} {
			e := newNodeEnv(t, d, 0)
			e.cfg.API.Addr = c.addr
			e.cfg.API.Token = "a-test-token-of-enough-length"
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := Serve(ctx, &e.cfg, Options{NoMigrate: true, Logger: e.log})
			cancel()
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "api.addr")
			var nodes int64
			require.NoError(t, e.st.DB().Model(&models.Node{}).Count(&nodes).Error)
			require.Zero(t, nodes, "%s: the node joined the cluster before its API could listen", c.addr)
		}
	})
}
