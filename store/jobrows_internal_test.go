package store

import (
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm/schema"

	"github.com/chimesched/chime/models"
)

// The claim, recovery and the outbox scan jobs and notifications with
// database/sql through jobField and noticeField; a column a model gains
// must be mapped there too, or the engines would see it zero on every row.
func TestRowFieldsCoverModels(t *testing.T) {
	t.Parallel()
	var j models.Job
	var n models.Notification
	for _, c := range []struct {
		model any
		field func(col string) any
	}{
		{&j, func(col string) any { return jobField(&j, col) }},
		{&n, func(col string) any { return noticeField(&n, col) }},
	} {
		s, err := schema.Parse(c.model, &sync.Map{}, schema.NamingStrategy{})
		require.NoError(t, err)
		for _, f := range s.Fields {
			if f.DBName == "" {
				continue
			}
			got := c.field(f.DBName)
			if z, ok := got.(interface{ fieldPtr() any }); ok {
				got = z.fieldPtr()
			}
			want := reflect.ValueOf(c.model).Elem().FieldByName(f.Name).Addr().Interface()
			require.Equal(t, reflect.ValueOf(want).Pointer(), reflect.ValueOf(got).Pointer(), "%s.%s", s.Table, f.DBName)
		}
	}
}
