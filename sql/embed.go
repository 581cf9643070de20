// Package sql embeds chime's versioned schema migrations, one folder per
// dialect (mysql/, sqlite/). The files are goose migrations; store applies
// them. Schema truth lives here, not in GORM's AutoMigrate.
//
// sql imports only the standard library.
package sql

import "embed"

// Migrations holds mysql/*.sql and sqlite/*.sql.
//
//go:embed mysql/*.sql sqlite/*.sql
var Migrations embed.FS
