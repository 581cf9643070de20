// Package javasertest writes Java serialization streams byte by byte, as
// java.io.ObjectOutputStream would, for tests that need what Java never
// writes (hostile input) or a stream's exact shape without a JDK at hand.
// The caller counts handles: each class descriptor, object, string, array,
// enum constant and class gets the next one, from 0, in stream order.
package javasertest

import (
	"bytes"
	"encoding/binary"
)

// The type codes a test writes by hand (java.io.ObjectStreamConstants).
const (
	TCNull         = 0x70
	TCReference    = 0x71
	TCClassDesc    = 0x72
	TCObject       = 0x73
	TCString       = 0x74
	TCArray        = 0x75
	TCBlockData    = 0x77
	TCEndBlockData = 0x78

	baseWireHandle = 0x7E0000
)

// Stream is a serialization stream being written.
type Stream struct{ bytes.Buffer }

// New starts a stream: magic 0xACED, version 5.
func New() *Stream {
	s := &Stream{}
	s.Write([]byte{0xAC, 0xED, 0x00, 0x05})
	return s
}

func (s *Stream) U8(v ...byte) *Stream { s.Write(v); return s }
func (s *Stream) U16(v uint16) *Stream { s.Write(binary.BigEndian.AppendUint16(nil, v)); return s }
func (s *Stream) U32(v uint32) *Stream { s.Write(binary.BigEndian.AppendUint32(nil, v)); return s }
func (s *Stream) U64(v uint64) *Stream { s.Write(binary.BigEndian.AppendUint64(nil, v)); return s }

// UTF writes a length-prefixed name (ASCII is its own modified UTF-8).
func (s *Stream) UTF(v string) *Stream { s.U16(uint16(len(v))); s.WriteString(v); return s }

// Str writes a TC_STRING.
func (s *Stream) Str(v string) *Stream { s.U8(TCString); return s.UTF(v) }

// Ref writes a back-reference to handle h.
func (s *Stream) Ref(h int) *Stream { s.U8(TCReference); return s.U32(uint32(baseWireHandle + h)) }

// Field is a serializable field of a descriptor: its type code, name and,
// for 'L' and '[', its JVM signature.
type Field struct {
	Type byte
	Name string
	Sig  string
}

// Desc writes a TC_CLASSDESC with no annotations; super writes the
// superclass descriptor (nil: TC_NULL). A field's signature takes a handle.
func (s *Stream) Desc(name string, flags byte, fields []Field, super func()) *Stream {
	s.U8(TCClassDesc).UTF(name).U64(42).U8(flags).U16(uint16(len(fields)))
	for _, f := range fields {
		s.U8(f.Type).UTF(f.Name)
		if f.Sig != "" {
			s.Str(f.Sig)
		}
	}
	s.U8(TCEndBlockData)
	if super == nil {
		s.U8(TCNull)
	} else {
		super()
	}
	return s
}

// HashMap writes a java.util.HashMap of n entries as HashMap.writeObject
// does; entries writes them, key then value. It takes handles 0 (the
// descriptor) and 1 (the map) when it starts the stream.
func (s *Stream) HashMap(n int, entries func()) *Stream {
	s.U8(TCObject).Desc("java.util.HashMap", 0x03, []Field{F('F', "loadFactor", ""), F('I', "threshold", "")}, nil)
	s.U32(0x3F400000).U32(12)                   // 0.75f, threshold
	s.U8(TCBlockData, 8).U32(16).U32(uint32(n)) // buckets, size
	entries()
	return s.U8(TCEndBlockData)
}

// ObjectArray starts a TC_ARRAY of class [Ljava.lang.Object; with n
// elements, which the caller writes next. A new descriptor (desc < 0)
// takes a handle before the array's; otherwise desc is its handle.
func (s *Stream) ObjectArray(desc, n int) *Stream {
	s.U8(TCArray)
	if desc < 0 {
		s.Desc("[Ljava.lang.Object;", 0x02, nil, nil)
	} else {
		s.Ref(desc)
	}
	return s.U32(uint32(n))
}

// F is a Field.
func F(typ byte, name, sig string) Field { return Field{Type: typ, Name: name, Sig: sig} }
