package models

import "time"

// Secret is one named secret. Table secrets. Its value is never kept in
// clear: Ciphertext is AES-256-GCM of the value under the key KeyID names,
// with Nonce, both in standard base64, and the secret's name as associated
// data (package secrets). Jobs refer to it by name from their params
// ({"$secret": "NAME"}); only a worker, at run time, reads the value.
type Secret struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement" json:"-"`
	Name       string    `gorm:"column:name" json:"name"`
	Ciphertext string    `gorm:"column:ciphertext" json:"-"`
	Nonce      string    `gorm:"column:nonce" json:"-"`
	KeyID      string    `gorm:"column:key_id" json:"-"`
	CreatedAt  time.Time `gorm:"column:created_at" json:"created_at"`
	UpdatedAt  time.Time `gorm:"column:updated_at" json:"updated_at"`
}

// TableName implements gorm's tabler.
func (Secret) TableName() string { return "secrets" }
