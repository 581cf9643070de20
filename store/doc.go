// Package store is chime's only door to the database. It opens MySQL
// (MariaDB) or SQLite through GORM, applies the embedded migrations, and holds
// every query beyond plain CRUD: fire, claim, complete, heartbeat, lease,
// recover. Engines declare the small interfaces they need; store implements
// them, and the differences between dialects live here and nowhere else.
//
// store may import models, sql and third-party database libraries; it never
// imports an engine, the API or the CLI.
//
// Times written by store are UTC truncated to the microsecond (see DBTime):
// MySQL keeps DATETIME(6), and SQLite compares timestamps as text, which is
// only time order when every writer uses one format and one zone. Migration
// 00003 holds other writers to that: on MySQL, triggers convert what a
// session not at '+00:00' writes from its zone to UTC (chime's connections
// are at '+00:00', see mysqlDSN, and pass untouched); on SQLite, triggers
// rewrite other time text into the driver's form or refuse it.
package store
