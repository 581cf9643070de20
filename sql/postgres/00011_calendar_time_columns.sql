-- Empty on PostgreSQL: TIMESTAMPTZ already reads a literal in the writer's
-- session zone, which is what the MySQL and SQLite 00011 triggers add for
-- the calendars table. It keeps goose's version numbers the same on every
-- dialect.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
