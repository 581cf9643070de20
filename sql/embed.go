// Package sql embeds chime's versioned schema migrations, one folder per
// dialect (mysql/, sqlite/, postgres/). The files are goose migrations; store applies
// them. Schema truth lives here, not in GORM's AutoMigrate.
//
// sql imports only the standard library.
package sql

import "embed"

// Migrations holds mysql/*.sql, sqlite/*.sql and postgres/*.sql.
//
//go:embed mysql/*.sql sqlite/*.sql postgres/*.sql
var Migrations embed.FS
