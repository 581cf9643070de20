package quartzimport

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func TestApplyPriority(t *testing.T) {
	for _, tc := range []struct {
		quartz int64
		want   *int
		noted  bool
	}{
		{quartz: 5},               // Quartz's default: the definition's
		{quartz: 7, want: new(7)}, // in range: as it is
		{quartz: 1, want: new(1)}, // chime's lowest
		{quartz: 100, want: new(10), noted: true},
		{quartz: -3, want: new(1), noted: true},
	} {
		s := &models.Schedule{Priority: new(4)}
		note := applyPriority(s, tc.quartz)
		require.Equal(t, tc.want, s.Priority, "Quartz priority %d", tc.quartz)
		require.Equal(t, tc.noted, note != "", "Quartz priority %d: note %q", tc.quartz, note)
	}
}
