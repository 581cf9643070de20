package chimedb

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// Actor is who makes a change and through which door (models.AuditDoor*),
// for the audit log. The store marks the transactions of a context that
// carries one, and the audit triggers record it instead of the database
// user and door "sql".
type Actor struct {
	Name string
	Door string
}

type actorKey struct{}

// WithActor returns ctx carrying a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf returns the actor ctx carries, if any.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok && a.Name != ""
}

// EngineActor is chime itself changing an admin object (a schedule that
// ran out of fires, or one whose row cannot be read).
var EngineActor = Actor{Name: "chime", Door: models.AuditDoorEngine}

// AuditListParams asks for one page of the audit log, newest first.
// Zero values mean "no filter".
type AuditListParams struct {
	BeforeID   int64
	Limit      int
	ObjectType string
	ObjectID   string
	Actor      string
	// Since (inclusive) and Until (exclusive) bound at.
	Since, Until time.Time
}

// AuditStore reads the audit log and applies its retention.
type AuditStore interface {
	ListAudit(ctx context.Context, p *AuditListParams) ([]models.AuditEntry, error)
	// DeleteOldAudit deletes at most batch rows older than olderThan by
	// the database's clock and returns how many went.
	DeleteOldAudit(ctx context.Context, olderThan time.Duration, batch int) (int, error)
}
