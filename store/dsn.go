package store

import (
	"fmt"
	"regexp"
	"strings"
)

// dsnForm names the driver whose DSN form dsn has, when no other driver's
// DSN could have that form; "" when unsure. Open checks it against the
// configured driver first: a DSN of another form would otherwise fail on
// something else (a SQLite directory named after a MySQL address, the
// MySQL form shown for a PostgreSQL URL), with the DSN, and a password in
// it, in the message.
func dsnForm(dsn string) Dialect {
	s := strings.TrimSpace(dsn)
	lower := strings.ToLower(s)
	hasPrefix := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(lower, p) {
				return true
			}
		}
		return false
	}
	switch {
	case hasPrefix("postgres://", "postgresql://") || libpqKeyValue.MatchString(s):
		return Postgres
	case hasPrefix("mysql://", "mariadb://", "tcp(", "unix(") ||
		strings.Contains(lower, "@tcp(") || strings.Contains(lower, "@unix("):
		return MySQL
	case hasPrefix("file:", "sqlite:", "sqlite3:", ":memory:"):
		return SQLite
	}
	// A file name with a SQLite extension, where neither server DSN puts
	// an address.
	path, _, _ := strings.Cut(lower, "?")
	if !strings.ContainsAny(path, "@(=") {
		for _, ext := range []string{".db", ".sqlite", ".sqlite3", ".db3"} {
			if strings.HasSuffix(path, ext) {
				return SQLite
			}
		}
	}
	return ""
}

// libpqKeyValue matches the start of a libpq key=value DSN
// (host=127.0.0.1 user=chime dbname=chime).
var libpqKeyValue = regexp.MustCompile(`(?i)^(host|hostaddr|port|dbname|user|password|sslmode|service)\s*=`)

// dialectNames are the names the messages give each driver.
var dialectNames = map[Dialect]string{SQLite: "SQLite", MySQL: "MySQL", Postgres: "PostgreSQL"}

// checkDSNForm refuses a DSN in another driver's form than driver's, and
// a sqlite:// URL, which SQLite does not take. Its messages never repeat
// the DSN.
func checkDSNForm(driver Dialect, dsn string) error {
	form := dsnForm(dsn)
	if driver == SQLite && form == SQLite && strings.HasPrefix(strings.ToLower(strings.TrimSpace(dsn)), "sqlite") {
		return fmt.Errorf("database.dsn: SQLite takes a file path (chime.db, /var/lib/chime/chime.db) " +
			"or a file: URI (file:/var/lib/chime/chime.db), not a sqlite:// URL")
	}
	if form == "" || form == driver {
		return nil
	}
	return mismatch(driver, form)
}

func mismatch(driver, form Dialect) error {
	return fmt.Errorf("database.dsn looks like a %s DSN, but database.driver is %s: set CHIME_DATABASE_DRIVER=%s "+
		"(database.driver: %s in the configuration file)", dialectNames[form], driver, form, form)
}
