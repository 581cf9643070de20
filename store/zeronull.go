package store

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"

	"gorm.io/gorm/schema"
)

// zeroNull is the gorm serializer of models.Schedule.JobDefinitionID
// (tag serializer:zeronull): 0 is written as NULL and NULL read as 0, so
// that a schedule of a workflow has no definition in its row while the
// field stays the int64 every other schedule's code reads.
type zeroNull struct{}

func init() { schema.RegisterSerializer("zeronull", zeroNull{}) }

func (zeroNull) Scan(ctx context.Context, field *schema.Field, dst reflect.Value, dbValue any) error {
	var v sql.NullInt64
	if err := v.Scan(dbValue); err != nil {
		return fmt.Errorf("column %s: %w", field.DBName, err)
	}
	field.ReflectValueOf(ctx, dst).SetInt(v.Int64)
	return nil
}

func (zeroNull) Value(_ context.Context, _ *schema.Field, _ reflect.Value, fieldValue any) (any, error) {
	if n, ok := fieldValue.(int64); ok && n == 0 {
		return nil, nil
	}
	return fieldValue, nil
}
