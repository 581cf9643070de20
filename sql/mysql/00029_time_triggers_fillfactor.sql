-- See the PostgreSQL migration of the same number: it leaves room on
-- time_triggers' pages so that a fire's update of its row stays on the
-- row's page without new index entries (HOT). This database has no such
-- setting to change; the version keeps the three dialects' numbers in
-- step.

-- +goose Up

-- +goose Down
