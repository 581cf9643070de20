package scheduleengine

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The database drivers keep connection openers alive until their pools
	// close at test cleanup, after goleak's check.
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"),
		// ants's default pool, started when the hand-off tests' task
		// engine brings the package in, lives as long as the process.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
