package store_test

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
)

// Bound values can be credentials (an smtp.password row, a task's params),
// so statements are logged with their placeholders, even at trace level and
// when a statement fails.
func TestSQLLogsHoldNoBoundValues(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var out syncbuf.Buffer
			log := logrus.New()
			log.SetOutput(&out)
			log.SetLevel(logrus.TraceLevel)
			st := testdb.OpenLogged(t, d, log)
			ctx := context.Background()

			const secret = "hunter2-do-not-log"
			require.NoError(t, st.Admin().SetConfiguration(ctx, &models.Configuration{Name: "smtp.password", Value: secret}))
			_, err := st.Admin().GetConfiguration(ctx, secret)
			require.Error(t, err)
			require.Error(t, st.DB().Exec("SELECT * FROM no_such_table WHERE x = ?", secret).Error)

			logged := out.String()
			require.Contains(t, logged, "configurations", "statements are still logged at trace")
			require.Contains(t, logged, "no_such_table", "failed statements are still logged")
			require.NotContains(t, logged, secret)
		})
	}
}
