package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
)

// MySQL server errors a first start meets.
const (
	mysqlErrDBAccessDenied = 1044 // the user may not use (or create) this database
	mysqlErrUnknownDB      = 1049
)

// dsnFormHelp is the form of a go-sql-driver DSN, for every error about one.
const dsnFormHelp = "write user:password@tcp(host:port)/dbname, such as root@tcp(127.0.0.1:3306)/chime"

// mysqlFirstRun turns what opening a MySQL DSN failed with (err, from
// mysqlDSN) into something a newcomer can act on: a DSN written
// host:port without tcp(...) is told the form it needs, and a database
// that does not exist is created when the user may, then opened again with
// open. Errors never repeat the DSN, which may hold a password.
func mysqlFirstRun(ctx context.Context, dsn string, log logrus.FieldLogger, err error,
	open func(context.Context, string) (string, error)) (string, error) {
	c, perr := mysqldrv.ParseDSN(dsn)
	if perr != nil {
		if missingNetwork(dsn) {
			return "", fmt.Errorf("database.dsn: the server address needs its network around it: %s (go-sql-driver/mysql's form): %w", dsnFormHelp, perr)
		}
		return "", err
	}
	var me *mysqldrv.MySQLError
	if c.DBName == "" || !errors.As(err, &me) {
		return "", err
	}
	switch me.Number {
	case mysqlErrUnknownDB:
		if cerr := createMySQLDatabase(ctx, c); cerr != nil {
			return "", fmt.Errorf("database.dsn: database %q does not exist, and creating it failed (%v): %s",
				c.DBName, cerr, grantHelp(c))
		}
		log.WithField("database", c.DBName).Info("created the MySQL database the DSN names: it did not exist")
		return open(ctx, dsn)
	case mysqlErrDBAccessDenied:
		return "", fmt.Errorf("database.dsn: user %q may not use database %q, which may also not exist: %s (%w)",
			c.User, c.DBName, grantHelp(c), err)
	}
	return "", err
}

// missingNetwork reports whether dsn names its server as user@host:port/db
// (or user@host/db) instead of user@tcp(host:port)/db: go-sql-driver then
// takes the address for a network name, and its error does not say so.
func missingNetwork(dsn string) bool {
	slash := strings.LastIndex(dsn, "/")
	if slash < 0 {
		return false
	}
	at := strings.LastIndex(dsn[:slash], "@")
	if at < 0 {
		return false
	}
	addr := dsn[at+1 : slash]
	return addr != "" && !strings.Contains(addr, "(")
}

// createMySQLDatabase creates c.DBName through a connection without a
// database, with the character set and collation the migrations use.
func createMySQLDatabase(ctx context.Context, c *mysqldrv.Config) error {
	admin := c.Clone()
	admin.DBName = ""
	conn, err := mysqldrv.NewConnector(admin)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(c.DBName)+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	return err
}

// grantHelp is what an admin runs so that c's user can use c's database.
func grantHelp(c *mysqldrv.Config) string {
	return fmt.Sprintf("as a MySQL admin run CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; "+
		"GRANT ALL ON %s.* TO %s@'%%'; then start chime again", quoteIdent(c.DBName), quoteIdent(c.DBName), quoteString(c.User))
}

func quoteIdent(s string) string  { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
