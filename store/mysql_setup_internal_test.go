package store

import (
	"context"
	"errors"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// Without a server to ask CURRENT_USER(), the account comes from the
// access-denied message, and only for the DSN's user; else '%'.
func TestMySQLAccountWithoutServer(t *testing.T) {
	t.Parallel()
	c := mysqldrv.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "chime", "tcp", "127.0.0.1:1", "chime_db"
	denied := errors.New("Error 1044 (42000): Access denied for user 'chime'@'10.0.0.7' to database 'chime_db'")
	require.Equal(t, "'chime'@'10.0.0.7'", mysqlAccount(context.Background(), c, denied))
	other := errors.New("Error 1044 (42000): Access denied for user 'root'@'10.0.0.7' to database 'chime_db'")
	require.Equal(t, "'chime'@'%'", mysqlAccount(context.Background(), c, other))
	require.Contains(t, grantHelp(c, "'chime'@'%'"), "GRANT ALL ON `chime\\_db`.* TO 'chime'@'%';")
}
