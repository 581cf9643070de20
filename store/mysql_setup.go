package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
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
				c.DBName, cerr, grantHelp(c, mysqlAccount(ctx, c, cerr)))
		}
		log.WithField("database", c.DBName).Info("created the MySQL database the DSN names: it did not exist")
		return open(ctx, dsn)
	case mysqlErrDBAccessDenied:
		return "", fmt.Errorf("database.dsn: user %q may not use database %q, which may also not exist: %s (%w)",
			c.User, c.DBName, grantHelp(c, mysqlAccount(ctx, c, err)), err)
	}
	return "", err
}

// mysqlAccount returns the account, quoted ('chime'@'127.0.0.1'), that the
// server matched c's user to: a GRANT must name it exactly, since a GRANT
// to the same user at another host names an account that does not exist
// (ERROR 1133). The server says it in CURRENT_USER(), through a connection
// without a database, which a user without rights may still open. When
// that fails, the host of the access-denied message err (the client's
// address, which is the account's host unless the account has a pattern
// such as '%'), and at last '%'.
func mysqlAccount(ctx context.Context, c *mysqldrv.Config, err error) string {
	bare := c.Clone()
	bare.DBName = ""
	if conn, cerr := mysqldrv.NewConnector(bare); cerr == nil {
		db := sql.OpenDB(conn)
		defer db.Close()
		var current string
		if db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&current) == nil {
			if i := strings.LastIndexByte(current, '@'); i >= 0 {
				return quoteString(current[:i]) + "@" + quoteString(current[i+1:])
			}
		}
	}
	if m := deniedAccount.FindStringSubmatch(errorText(err)); m != nil && m[1] == c.User {
		return quoteString(m[1]) + "@" + quoteString(m[2])
	}
	return quoteString(c.User) + "@'%'"
}

// deniedAccount finds the account in MySQL's access-denied messages:
// "Access denied for user 'chime'@'127.0.0.1' to database 'chime'".
var deniedAccount = regexp.MustCompile(`for user '([^']*)'@'([^']*)'`)

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
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

// grantHelp is what an admin runs so that account (as mysqlAccount quotes
// it) can use c's database. The GRANT escapes _ and %, which are wildcards
// in a GRANT's database name: `chime_db` would also grant chimeXdb.
func grantHelp(c *mysqldrv.Config, account string) string {
	pattern := strings.NewReplacer(`\`, `\\`, "_", `\_`, "%", `\%`).Replace(c.DBName)
	return fmt.Sprintf("as a MySQL admin run CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; "+
		"GRANT ALL ON %s.* TO %s; then start chime again", quoteIdent(c.DBName), quoteIdent(pattern), account)
}

func quoteIdent(s string) string  { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
