-- A fire rewrites its schedule's time_triggers row (last_fire_at,
-- next_fire_at, the counts): every second for a schedule that fires every
-- second. No index covers those columns, so PostgreSQL could keep each new
-- version on the row's page with no new index entries (a HOT update), but
-- only when the page has room for it: the rows are inserted tightly
-- (fillfactor 100), and measured in a continuous run of 8,000 every-second
-- schedules 7 % of the updates were HOT. The rest each added an entry to
-- both of the table's indexes, which the fire's next read by schedule_id
-- walked past until vacuum removed them. With pages filled to half, the
-- update finds room beside the old version, which page pruning reclaims
-- once no transaction sees it. Pages written before this migration keep
-- their rows until those move (their next non-HOT update puts them on a
-- page filled to the new factor) or a VACUUM FULL rewrites the table.

-- +goose Up
ALTER TABLE time_triggers SET (fillfactor = 50);

-- +goose Down
ALTER TABLE time_triggers RESET (fillfactor);
