-- Empty on PostgreSQL: 00001_init.sql already holds what this step adds
-- on MySQL and SQLite. It keeps goose's version numbers the same on every
-- dialect.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
