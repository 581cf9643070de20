package javaser

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ClassName is the name of the object's class.
func (o *Object) ClassName() string { return o.Class.Name }

// InstanceOf reports whether the object's class or one of its serializable
// superclasses is named name.
func (o *Object) InstanceOf(name string) bool {
	return o.ClassData(name) != nil
}

// ClassData is what class name of the object's hierarchy wrote, or nil.
func (o *Object) ClassData(name string) *ClassData {
	for i := len(o.Data) - 1; i >= 0; i-- {
		if o.Data[i].Class.Name == name {
			return &o.Data[i]
		}
	}
	return nil
}

// Field is the value of the field name, looked up from the object's class
// up through its superclasses (a subclass's field hides its superclass's).
func (o *Object) Field(name string) (any, bool) {
	for i := len(o.Data) - 1; i >= 0; i-- {
		cd := &o.Data[i]
		for j, f := range cd.Class.Fields {
			if f.Name == name && j < len(cd.Values) {
				return cd.Values[j], true
			}
		}
	}
	return nil, false
}

// FieldAs is the field name of o as a T; an error, naming the class and
// field, when there is no such field or it holds something else. A null
// field is the zero T when T can hold nil (a pointer, a slice, any).
func FieldAs[T any](o *Object, name string) (T, error) {
	var zero T
	v, ok := o.Field(name)
	if !ok {
		return zero, fmt.Errorf("%s has no field %s", o.Class.Name, name)
	}
	if v == nil {
		switch any(zero).(type) {
		case string, bool, int8, uint16, int16, int32, int64, float32, float64:
			return zero, fmt.Errorf("%s.%s is null", o.Class.Name, name)
		}
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%s.%s is a %s, not a %T", o.Class.Name, name, kindOf(v), zero)
	}
	return t, nil
}

// Stream reads the data that class name's writeObject (or writeExternal)
// wrote for the object, as the class's readObject would: primitives from
// block data, objects in between. Reading what is not there is an error.
func (o *Object) Stream(name string) *Stream {
	cd := o.ClassData(name)
	if cd == nil {
		return &Stream{err: fmt.Errorf("%s is no %s", o.Class.Name, name)}
	}
	return &Stream{class: name, items: cd.Annotations}
}

// Stream is a reader over a class's writeObject data. After the first
// error every read fails with it.
type Stream struct {
	class string
	items []any
	i     int // current item
	off   int // read offset in the current item, when it is BlockData
	err   error
}

// Err is the first error a read met.
func (s *Stream) Err() error { return s.err }

func (s *Stream) fail(format string, args ...any) error {
	if s.err == nil {
		s.err = fmt.Errorf("data of %s: "+format, append([]any{s.class}, args...)...)
	}
	return s.err
}

func (s *Stream) bytes(n int) ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	for s.i < len(s.items) {
		b, ok := s.items[s.i].(BlockData)
		if !ok {
			return nil, s.fail("an object where %d bytes of primitive data were expected", n)
		}
		if s.off < len(b) {
			if len(b)-s.off < n {
				return nil, s.fail("%d bytes of primitive data left, %d needed", len(b)-s.off, n)
			}
			s.off += n
			return b[s.off-n : s.off], nil
		}
		s.i, s.off = s.i+1, 0
	}
	return nil, s.fail("ends where %d bytes of primitive data were expected", n)
}

// ReadInt32 reads an int (DataOutput.writeInt).
func (s *Stream) ReadInt32() (int32, error) {
	b, err := s.bytes(4)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// ReadInt64 reads a long.
func (s *Stream) ReadInt64() (int64, error) {
	b, err := s.bytes(8)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// ReadFloat32 reads a float.
func (s *Stream) ReadFloat32() (float32, error) {
	b, err := s.bytes(4)
	if err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
}

// ReadBool reads a boolean.
func (s *Stream) ReadBool() (bool, error) {
	b, err := s.bytes(1)
	if err != nil {
		return false, err
	}
	return b[0] != 0, nil
}

// ReadObject reads the next object (nil for null). Unread primitive data
// before it is an error, as in ObjectInputStream.
func (s *Stream) ReadObject() (any, error) {
	if s.err != nil {
		return nil, s.err
	}
	for s.i < len(s.items) {
		b, ok := s.items[s.i].(BlockData)
		if !ok {
			s.i, s.off = s.i+1, 0
			return s.items[s.i-1], nil
		}
		if s.off < len(b) {
			return nil, s.fail("%d bytes of primitive data where an object was expected", len(b)-s.off)
		}
		s.i, s.off = s.i+1, 0
	}
	return nil, s.fail("ends where an object was expected")
}
