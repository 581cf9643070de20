package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobsChannel is the channel migration 00001's chime_jobs_notify trigger
// notifies when a pending job is due: inserted by any node or by plain SQL,
// or set back to pending and due.
const JobsChannel = "chime_jobs"

// ListenApplicationName is the application_name of the LISTEN connection,
// so an admin (or a test) can tell it apart in pg_stat_activity.
const ListenApplicationName = "chime listen"

// ErrNoNotify says the database has no NOTIFY: SQLite, MySQL. Workers
// there rely on the poll and on wake-ups from their own node.
var ErrNoNotify = errors.New("this database has no LISTEN/NOTIFY")

// Listen backoff between reconnects of the LISTEN connection.
const (
	listenBackoffFirst = 100 * time.Millisecond
	listenBackoffLast  = 5 * time.Second
	listenIdleCheck    = 30 * time.Second
	listenPingTimeout  = 5 * time.Second
)

// ListenJobs holds one connection, outside the pool, that LISTENs on
// JobsChannel, and calls wake for each notification, until ctx ends; then
// it returns nil. A lost connection is opened again with backoff, and wake
// is called once each time LISTEN is (re)established, since notifications
// sent while nobody listened are lost: the poll stays the safety net
// either way. wake must not block (taskengine.Engine.Wake coalesces a
// burst into one look). On a database without NOTIFY it returns
// ErrNoNotify at once.
func (s *Store) ListenJobs(ctx context.Context, wake func()) error {
	if s.dialect != Postgres {
		return ErrNoNotify
	}
	backoff := listenBackoffFirst
	for {
		up, err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return nil
		}
		if pgCode(err) == pgFeatureNotSupported {
			// A PostgreSQL-compatible server without LISTEN (YugabyteDB
			// by default): asking again would only fill the log.
			return fmt.Errorf("LISTEN %s: %w", JobsChannel, err)
		}
		if up {
			backoff = listenBackoffFirst
		}
		s.log.WithError(err).WithField("retry_in", backoff).
			Warn("lost the PostgreSQL LISTEN connection; jobs inserted meanwhile start at the next poll")
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, listenBackoffLast)
	}
}

// listenOnce connects, LISTENs and relays notifications until the
// connection fails or ctx ends. up says whether LISTEN was established.
func (s *Store) listenOnce(ctx context.Context, wake func()) (up bool, err error) {
	cfg := s.pgConfig.Copy()
	cfg.RuntimeParams["application_name"] = ListenApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer func() {
		// A fresh context: ctx may be done, and the server should still
		// hear the goodbye.
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(c)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+JobsChannel); err != nil {
		return false, err
	}
	wake()
	for {
		// A connection whose server vanished without a word (a dropped
		// route, a failover) says nothing to a waiting reader, so an idle
		// wait is cut short now and then to ask the server.
		wctx, cancel := context.WithTimeout(ctx, listenIdleCheck)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil {
			wake()
			continue
		}
		if ctx.Err() != nil || wctx.Err() == nil {
			return true, err
		}
		pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return true, err
		}
	}
}
