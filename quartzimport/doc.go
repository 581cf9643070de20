// Package quartzimport moves a Quartz 2.x JDBC job store into chime: it
// reads the QRTZ_ tables of a MySQL/MariaDB database (Quartz's
// tables_mysql_innodb.sql) and writes chime calendars, job definitions and
// schedules. It is what `chime import quartz` runs; docs/quartz.md
// ("Moving from Quartz") has the mapping and the report.
//
// Every object is checked by the API's own rules (package validate:
// Calendar, Definition, Schedule) and written through
// chimedb.AdminQueries, one object per store call, so an import writes
// nothing the API would refuse. Objects are found by name:
// a second run finds what the first created and changes nothing, and a
// chime object of the same name that differs is left alone and reported.
//
// The Quartz store is hostile input (an admin's rows, Java blobs): every
// row that cannot be read or mapped becomes a report line saying why, never
// a crash. The table prefix is put into SQL, so only identifier characters
// are accepted.
//
// quartzimport may import validate, chimedb, models, tasks, trigger,
// internal/javaser and the MySQL driver, which it uses only to read the
// Quartz store; chime's own database is reached only through chimedb. It
// never imports store, api, app or cli (chimedb's TestSeamHasNoDrivers
// checks the store and the ORM).
package quartzimport
