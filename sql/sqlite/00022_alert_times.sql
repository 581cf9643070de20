-- See the MySQL migration of the same number: MySQL's triggers that read
-- a timestamp written from a session not at '+00:00' as that zone's time,
-- for the alert tables. This database has no such sessions (SQLite
-- keeps text, PostgreSQL's TIMESTAMPTZ is an instant); its alert times
-- are written by chime or take their column defaults. Nothing to change;
-- the version keeps the three dialects' numbers in step.

-- +goose Up

-- +goose Down
