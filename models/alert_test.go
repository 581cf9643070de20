package models

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAlertRuleScopesAndFlapping: the params of lease_flapping and the
// queue and workflow scopes are checked as a row is read, whoever wrote
// it: a bad one is a reason, never a panic.
func TestAlertRuleScopesAndFlapping(t *testing.T) {
	t.Parallel()
	q, empty, id := "etl", "", int64(4)
	tests := []struct {
		name   string
		rule   AlertRule
		reason string // "" when valid
	}{
		{"flapping", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll, Params: JSON(`{"max_changes":3,"within_seconds":3600}`)}, ""},
		{"flapping of the maintenance lease", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll,
			Params: JSON(`{"max_changes":1,"within_seconds":60,"lease":"maintenance"}`)}, ""},
		{"flapping without X", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll, Params: JSON(`{"within_seconds":3600}`)}, "params.max_changes: 0"},
		{"flapping with a negative X", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll, Params: JSON(`{"max_changes":-1,"within_seconds":3600}`)}, "params.max_changes: -1"},
		{"flapping in no time", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll, Params: JSON(`{"max_changes":3,"within_seconds":1}`)}, "params.within_seconds: 1"},
		{"flapping over a year", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll, Params: JSON(`{"max_changes":3,"within_seconds":31536000}`)}, "params.within_seconds"},
		{"flapping of a lease chime has not", AlertRule{Event: EventLeaseFlapping, Scope: ScopeAll,
			Params: JSON(`{"max_changes":3,"within_seconds":3600,"lease":"mine"}`)}, `params.lease: "mine"`},
		{"flapping of one queue", AlertRule{Event: EventLeaseFlapping, Scope: ScopeQueue, Queue: &q,
			Params: JSON(`{"max_changes":3,"within_seconds":3600}`)}, "scope all"},
		{"flapping params on another event", AlertRule{Event: EventJobFailed, Scope: ScopeAll, Params: JSON(`{"max_changes":3}`)}, "lease_flapping's"},
		{"queue", AlertRule{Event: EventJobFailed, Scope: ScopeQueue, Queue: &q}, ""},
		{"queue without its name", AlertRule{Event: EventJobFailed, Scope: ScopeQueue}, "queue: a queue name"},
		{"queue named empty", AlertRule{Event: EventJobFailed, Scope: ScopeQueue, Queue: &empty}, "queue: a queue name"},
		{"workflow", AlertRule{Event: EventBacklog, Scope: ScopeWorkflow, WorkflowID: &id, Params: JSON(`{"wait_seconds":60}`)}, ""},
		{"workflow without its id", AlertRule{Event: EventJobFailed, Scope: ScopeWorkflow}, "workflow_id: required"},
		{"unknown scope", AlertRule{Event: EventJobFailed, Scope: "team"}, `scope: "team" is not one of`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule.Name = "r"
			p, err := tc.rule.ParsedParams()
			if tc.reason == "" {
				require.NoError(t, err)
				if tc.rule.Event == EventLeaseFlapping {
					require.NotEmpty(t, p.Lease, "the lease defaults to scheduler")
				}
				return
			}
			require.ErrorContains(t, err, tc.reason)
		})
	}
}
