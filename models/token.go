package models

import "time"

// Role is what an API token may do; each role may do what the one
// before it may, and more (see docs/security.md).
type Role string

const (
	// RoleViewer reads everything (secrets excepted).
	RoleViewer Role = "viewer"
	// RoleOperator also runs, pauses, resumes, stops and resets.
	RoleOperator Role = "operator"
	// RoleEditor also creates, changes and deletes definitions,
	// schedules and calendars, of the task types editors may use.
	RoleEditor Role = "editor"
	// RoleAdmin may do everything: tokens and configurations too.
	RoleAdmin Role = "admin"
)

// Roles lists the roles from least to most.
func Roles() []Role { return []Role{RoleViewer, RoleOperator, RoleEditor, RoleAdmin} }

// Rank orders the roles (viewer 1 … admin 4); 0 for a role chime does
// not know, which may do nothing.
func (r Role) Rank() int {
	for i, k := range Roles() {
		if k == r {
			return i + 1
		}
	}
	return 0
}

// APIToken is a named API token. Table api_tokens. Only the SHA-256 of
// the token is kept (TokenSHA256, lower-case hex); the token is shown
// once, when it is made.
type APIToken struct {
	ID          int64      `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name        string     `gorm:"column:name" json:"name"`
	TokenSHA256 string     `gorm:"column:token_sha256" json:"-"`
	Role        Role       `gorm:"column:role" json:"role"`
	Scope       string     `gorm:"column:scope" json:"scope"`
	ExpiresAt   *time.Time `gorm:"column:expires_at" json:"expires_at"`
	RevokedAt   *time.Time `gorm:"column:revoked_at" json:"revoked_at"`
	CreatedAt   time.Time  `gorm:"column:created_at" json:"created_at"`
}

// TableName implements gorm's tabler.
func (APIToken) TableName() string { return "api_tokens" }

// Live says whether the token may be used at now: not revoked, not
// expired, of a known role.
func (t *APIToken) Live(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt)) && t.Role.Rank() > 0
}
