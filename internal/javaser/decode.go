package javaser

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// The protocol's constants (java.io.ObjectStreamConstants).
const (
	streamMagic   = 0xACED
	streamVersion = 5

	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcException      = 0x7B
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E

	baseWireHandle = 0x7E0000
)

// Class descriptor flags.
const (
	FlagWriteMethod    = 0x01 // SC_WRITE_METHOD: the class has writeObject, its data follows the fields
	FlagSerializable   = 0x02 // SC_SERIALIZABLE
	FlagExternalizable = 0x04 // SC_EXTERNALIZABLE
	FlagBlockData      = 0x08 // SC_BLOCK_DATA: externalizable data is in block data (protocol 2)
	FlagEnum           = 0x10 // SC_ENUM
)

// Limits bound what one Decode may build, so a hostile BLOB costs at most
// a bounded amount of memory and time.
//
// A zero field takes DefaultLimits' value.
type Limits struct {
	MaxInput   int // bytes of input
	MaxDepth   int // nesting of objects, arrays, class descriptors and annotations; also a class hierarchy's length
	MaxObjects int // handles (objects, strings, arrays, enums, classes) plus an object's classes beyond its first, over the whole stream
	// MaxArrayElems bounds the elements of all arrays together.
	MaxArrayElems int
}

// DefaultLimits are generous for any calendar or job data map Quartz
// writes (kilobytes) and keep a hostile one to a few hundred megabytes of
// memory at worst.
var DefaultLimits = Limits{MaxInput: 16 << 20, MaxDepth: 100, MaxObjects: 1 << 20, MaxArrayElems: 1 << 22}

// Error is a decoding failure at a byte offset of the input.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("java serialization: at byte %d: %s", e.Offset, e.Msg)
}

// Class is a class descriptor: a class's name, serialVersionUID, flags,
// serializable fields and superclass descriptor, or a proxy class's
// interfaces.
type Class struct {
	Name             string
	SerialVersionUID int64
	Flags            byte
	Fields           []Field
	// Annotations are what ObjectOutputStream.annotateClass wrote; empty
	// for a plain ObjectOutputStream.
	Annotations []any
	Super       *Class
	Proxy       bool
	Interfaces  []string // a proxy class's

	chain int  // classes in the hierarchy, this one included
	done  bool // fully read: a descriptor still being read cannot be used
}

// Field is a serializable field of a class: its name, its type code
// ('B' byte, 'C' char, 'D' double, 'F' float, 'I' int, 'J' long,
// 'S' short, 'Z' boolean, 'L' object, '[' array) and, for the last two,
// the JVM type signature (e.g. "Ljava/lang/String;").
type Field struct {
	Name      string
	Type      byte
	ClassName string
}

// Object is a serialized object: its class and one ClassData per
// serializable class of its hierarchy, from the topmost superclass down
// to Class (one, Class's, for an externalizable object).
type Object struct {
	Class *Class
	Data  []ClassData
}

// ClassData is what one class of an object's hierarchy wrote: its fields'
// values (in the order of Class.Fields) and the data of its writeObject
// or writeExternal method.
type ClassData struct {
	Class       *Class
	Values      []any
	Annotations []any // BlockData and objects, in stream order; consecutive blocks joined
}

// BlockData is primitive data a writeObject or writeExternal method wrote
// (writeInt, writeLong, ...), in big-endian order.
type BlockData []byte

// Enum is an enum constant.
type Enum struct {
	Class *Class
	Name  string
}

// Decode reads the first object of a serialized stream with
// DefaultLimits, as ObjectInputStream.readObject does (any bytes after it
// are not read).
func Decode(data []byte) (any, error) {
	return DecodeWith(data, DefaultLimits)
}

// DecodeWith is Decode with other limits.
func DecodeWith(data []byte, lim Limits) (any, error) {
	d, err := newDecoder(data, lim)
	if err != nil {
		return nil, err
	}
	if d.pos == len(d.data) {
		return nil, d.errf("no object after the stream header")
	}
	v, err := d.content(false)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeAll reads every content of a stream to its end: objects and, for
// primitive data written between them, BlockData.
func DecodeAll(data []byte, lim Limits) ([]any, error) {
	d, err := newDecoder(data, lim)
	if err != nil {
		return nil, err
	}
	var out []any
	for d.pos < len(d.data) {
		v, err := d.content(true)
		if err != nil {
			return nil, err
		}
		out = appendContent(out, v)
	}
	return out, nil
}

type decoder struct {
	data    []byte
	pos     int
	lim     Limits
	handles []any
	depth   int
	objects int // handles ever assigned, resets included
	elems   int
}

func newDecoder(data []byte, lim Limits) (*decoder, error) {
	for _, f := range []struct{ v, def *int }{{&lim.MaxInput, &DefaultLimits.MaxInput}, {&lim.MaxDepth, &DefaultLimits.MaxDepth},
		{&lim.MaxObjects, &DefaultLimits.MaxObjects}, {&lim.MaxArrayElems, &DefaultLimits.MaxArrayElems}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	d := &decoder{data: data, lim: lim}
	if len(data) > lim.MaxInput {
		return nil, d.errf("input of %d bytes is longer than the limit of %d", len(data), lim.MaxInput)
	}
	if len(data) < 4 {
		return nil, d.errf("too short for a serialization stream (%d bytes)", len(data))
	}
	if m := binary.BigEndian.Uint16(data); m != streamMagic {
		return nil, d.errf("no stream magic 0xACED (found %#04x): not a Java serialization stream", m)
	}
	if v := binary.BigEndian.Uint16(data[2:]); v != streamVersion {
		return nil, &Error{Offset: 2, Msg: fmt.Sprintf("unsupported stream version %d (want 5)", v)}
	}
	d.pos = 4
	return d, nil
}

func (d *decoder) errf(format string, args ...any) error {
	return &Error{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) need(n int) ([]byte, error) {
	if n < 0 || n > len(d.data)-d.pos {
		return nil, d.errf("input ends: %d more bytes needed, %d left", n, len(d.data)-d.pos)
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) u8() (byte, error) {
	b, err := d.need(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16() (uint16, error) {
	b, err := d.need(2)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.need(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.need(8)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

func (d *decoder) peek() (byte, error) {
	if d.pos >= len(d.data) {
		return 0, d.errf("input ends where a content was expected")
	}
	return d.data[d.pos], nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > d.lim.MaxDepth {
		return d.errf("nested deeper than %d", d.lim.MaxDepth)
	}
	return nil
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) newHandle(v any) (int, error) {
	d.objects++
	if d.objects > d.lim.MaxObjects {
		return 0, d.errf("more than %d objects", d.lim.MaxObjects)
	}
	d.handles = append(d.handles, v)
	return len(d.handles) - 1, nil
}

func (d *decoder) reference() (any, error) {
	at := d.pos
	h, err := d.u32()
	if err != nil {
		return nil, err
	}
	i := int64(h) - baseWireHandle
	if i < 0 || i >= int64(len(d.handles)) {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("reference to handle %#x, which does not exist (%d handles)", h, len(d.handles))}
	}
	return d.handles[i], nil
}

// content reads one content: an object, or (where the grammar allows it)
// block data. TC_RESET is handled here, as ObjectInputStream does, only
// outside any object.
func (d *decoder) content(allowBlock bool) (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	for {
		at := d.pos
		tc, err := d.u8()
		if err != nil {
			return nil, err
		}
		switch tc {
		case tcNull:
			return nil, nil
		case tcReference:
			return d.reference()
		case tcObject:
			return d.object()
		case tcString:
			n, err := d.u16()
			if err != nil {
				return nil, err
			}
			return d.newString(int(n))
		case tcLongString:
			n, err := d.u64()
			if err != nil {
				return nil, err
			}
			if n > uint64(len(d.data)-d.pos) {
				return nil, d.errf("string of %d bytes, %d left", n, len(d.data)-d.pos)
			}
			return d.newString(int(n))
		case tcArray:
			return d.array()
		case tcEnum:
			return d.enum()
		case tcClass:
			c, err := d.classDesc()
			if err != nil {
				return nil, err
			}
			if c == nil {
				return nil, d.errf("class with a null descriptor")
			}
			if _, err := d.newHandle(c); err != nil {
				return nil, err
			}
			return c, nil
		case tcClassDesc, tcProxyClassDesc:
			d.pos = at
			return d.classDesc()
		case tcBlockData, tcBlockDataLong:
			if !allowBlock {
				return nil, &Error{Offset: at, Msg: "block data where an object was expected"}
			}
			return d.blockData(tc)
		case tcReset:
			if d.depth > 1 {
				return nil, &Error{Offset: at, Msg: "reset inside an object"}
			}
			d.handles = d.handles[:0]
		case tcException:
			return nil, &Error{Offset: at, Msg: "the writer failed while serializing (TC_EXCEPTION)"}
		case tcEndBlockData:
			return nil, &Error{Offset: at, Msg: "end of block data where an object was expected"}
		default:
			return nil, &Error{Offset: at, Msg: fmt.Sprintf("unknown type code %#02x", tc)}
		}
	}
}

func (d *decoder) newString(n int) (string, error) {
	at := d.pos
	b, err := d.need(n)
	if err != nil {
		return "", err
	}
	s, ok := modifiedUTF8(b)
	if !ok {
		return "", &Error{Offset: at, Msg: "string is not modified UTF-8"}
	}
	if _, err := d.newHandle(s); err != nil {
		return "", err
	}
	return s, nil
}

// utf reads a length-prefixed modified UTF-8 string that is no object
// (class and field names).
func (d *decoder) utf() (string, error) {
	n, err := d.u16()
	if err != nil {
		return "", err
	}
	at := d.pos
	b, err := d.need(int(n))
	if err != nil {
		return "", err
	}
	s, ok := modifiedUTF8(b)
	if !ok {
		return "", &Error{Offset: at, Msg: "name is not modified UTF-8"}
	}
	return s, nil
}

func (d *decoder) blockData(tc byte) (BlockData, error) {
	var n int
	if tc == tcBlockData {
		b, err := d.u8()
		if err != nil {
			return nil, err
		}
		n = int(b)
	} else {
		l, err := d.u32()
		if err != nil {
			return nil, err
		}
		if l > math.MaxInt32 {
			return nil, d.errf("negative block data length")
		}
		n = int(l)
	}
	b, err := d.need(n)
	if err != nil {
		return nil, err
	}
	// Capacity cut to the length: joining blocks (appendContent) then
	// copies out of the input instead of writing over it.
	return BlockData(b[:n:n]), nil
}

// classDesc reads a class descriptor where one is expected: a new one, a
// proxy one, a reference to one, or null.
func (d *decoder) classDesc() (*Class, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	at := d.pos
	tc, err := d.u8()
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := d.reference()
		if err != nil {
			return nil, err
		}
		c, ok := v.(*Class)
		if !ok {
			return nil, &Error{Offset: at, Msg: fmt.Sprintf("reference to a %s where a class descriptor was expected", kindOf(v))}
		}
		return c, nil
	case tcClassDesc:
		return d.newClassDesc()
	case tcProxyClassDesc:
		return d.newProxyDesc()
	}
	return nil, &Error{Offset: at, Msg: fmt.Sprintf("type code %#02x where a class descriptor was expected", tc)}
}

func (d *decoder) newClassDesc() (*Class, error) {
	name, err := d.utf()
	if err != nil {
		return nil, err
	}
	suid, err := d.u64()
	if err != nil {
		return nil, err
	}
	c := &Class{Name: name, SerialVersionUID: int64(suid)}
	if _, err := d.newHandle(c); err != nil {
		return nil, err
	}
	if c.Flags, err = d.u8(); err != nil {
		return nil, err
	}
	if c.Flags&FlagSerializable != 0 && c.Flags&FlagExternalizable != 0 {
		return nil, d.errf("class %s is both serializable and externalizable", name)
	}
	n, err := d.u16()
	if err != nil {
		return nil, err
	}
	if int(n)*3 > len(d.data)-d.pos {
		return nil, d.errf("class %s claims %d fields, more than the input holds", name, n)
	}
	c.Fields = make([]Field, 0, n)
	for range n {
		var f Field
		if f.Type, err = d.u8(); err != nil {
			return nil, err
		}
		if f.Name, err = d.utf(); err != nil {
			return nil, err
		}
		switch f.Type {
		case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
		case 'L', '[':
			at := d.pos
			v, err := d.content(false)
			if err != nil {
				return nil, err
			}
			s, ok := v.(string)
			if !ok {
				return nil, &Error{Offset: at, Msg: fmt.Sprintf("type of field %s.%s is a %s, not a string", name, f.Name, kindOf(v))}
			}
			f.ClassName = s
		default:
			return nil, d.errf("field %s.%s has unknown type code %q", name, f.Name, f.Type)
		}
		c.Fields = append(c.Fields, f)
	}
	if err := d.finishDesc(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (d *decoder) newProxyDesc() (*Class, error) {
	c := &Class{Proxy: true, Flags: FlagSerializable}
	if _, err := d.newHandle(c); err != nil {
		return nil, err
	}
	n, err := d.u32()
	if err != nil {
		return nil, err
	}
	if n > 65535 || int(n)*2 > len(d.data)-d.pos {
		return nil, d.errf("proxy class claims %d interfaces", n)
	}
	for range n {
		s, err := d.utf()
		if err != nil {
			return nil, err
		}
		c.Interfaces = append(c.Interfaces, s)
	}
	if err := d.finishDesc(c); err != nil {
		return nil, err
	}
	return c, nil
}

// finishDesc reads a descriptor's annotations and superclass. A
// superclass still being read would make the hierarchy a cycle.
func (d *decoder) finishDesc(c *Class) error {
	var err error
	if c.Annotations, err = d.annotations(); err != nil {
		return err
	}
	at := d.pos
	if c.Super, err = d.classDesc(); err != nil {
		return err
	}
	c.chain = 1
	if c.Super != nil {
		if !c.Super.done {
			return &Error{Offset: at, Msg: fmt.Sprintf("class %s is its own superclass", c.Name)}
		}
		c.chain = c.Super.chain + 1
		if c.chain > d.lim.MaxDepth {
			return &Error{Offset: at, Msg: fmt.Sprintf("class %s has more than %d superclasses", c.Name, d.lim.MaxDepth)}
		}
	}
	c.done = true
	return nil
}

// annotations reads contents up to TC_ENDBLOCKDATA.
func (d *decoder) annotations() ([]any, error) {
	var out []any
	for {
		tc, err := d.peek()
		if err != nil {
			return nil, err
		}
		if tc == tcEndBlockData {
			d.pos++
			return out, nil
		}
		v, err := d.content(true)
		if err != nil {
			return nil, err
		}
		out = appendContent(out, v)
	}
}

// appendContent joins consecutive block data, which a writer splits at
// arbitrary points (every 1024 bytes). The first join copies the block
// out of the input (its capacity is its length); later ones append to
// that copy, so many tiny blocks cost linear time, not quadratic.
func appendContent(out []any, v any) []any {
	if b, ok := v.(BlockData); ok && len(out) > 0 {
		if prev, ok := out[len(out)-1].(BlockData); ok {
			out[len(out)-1] = append(prev, b...)
			return out
		}
	}
	return append(out, v)
}

// usable checks that a descriptor may describe an instance.
func (d *decoder) usable(c *Class, at int, what string) error {
	if c == nil {
		return &Error{Offset: at, Msg: what + " with a null class descriptor"}
	}
	if !c.done {
		return &Error{Offset: at, Msg: fmt.Sprintf("%s of class %s inside that class's own descriptor", what, c.Name)}
	}
	return nil
}

func (d *decoder) object() (*Object, error) {
	at := d.pos
	c, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	if err := d.usable(c, at, "object"); err != nil {
		return nil, err
	}
	if c.Flags&FlagEnum != 0 {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("object of enum class %s", c.Name)}
	}
	o := &Object{Class: c}
	if _, err := d.newHandle(o); err != nil {
		return nil, err
	}
	// Each class of the hierarchy is a ClassData to hold: without this a
	// few bytes (TC_OBJECT and a reference to a deep class) would cost
	// kilobytes each.
	d.objects += c.chain - 1
	if d.objects > d.lim.MaxObjects {
		return nil, d.errf("more than %d objects (counting each class of an object's hierarchy)", d.lim.MaxObjects)
	}
	if c.Flags&FlagExternalizable != 0 {
		if c.Flags&FlagBlockData == 0 {
			return nil, d.errf("externalizable class %s written with protocol version 1 cannot be read without the class", c.Name)
		}
		ann, err := d.annotations()
		if err != nil {
			return nil, err
		}
		o.Data = []ClassData{{Class: c, Annotations: ann}}
		return o, nil
	}
	o.Data = make([]ClassData, c.chain)
	i := c.chain - 1
	for k := c; k != nil; k = k.Super {
		o.Data[i].Class = k
		i--
	}
	for i := range o.Data {
		k := o.Data[i].Class
		if k.Flags&FlagSerializable == 0 {
			return nil, d.errf("class %s in the hierarchy of %s is not serializable", k.Name, c.Name)
		}
		if o.Data[i].Values, err = d.values(k); err != nil {
			return nil, err
		}
		if k.Flags&FlagWriteMethod != 0 {
			if o.Data[i].Annotations, err = d.annotations(); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

func (d *decoder) values(c *Class) ([]any, error) {
	if len(c.Fields) == 0 {
		return nil, nil
	}
	vals := make([]any, len(c.Fields))
	for i, f := range c.Fields {
		var err error
		if f.Type == 'L' || f.Type == '[' {
			vals[i], err = d.content(false)
		} else {
			vals[i], err = d.primitive(f.Type)
		}
		if err != nil {
			return nil, err
		}
	}
	return vals, nil
}

func (d *decoder) primitive(t byte) (any, error) {
	switch t {
	case 'Z':
		b, err := d.u8()
		return b != 0, err
	case 'B':
		b, err := d.u8()
		return int8(b), err
	case 'C':
		v, err := d.u16()
		return v, err
	case 'S':
		v, err := d.u16()
		return int16(v), err
	case 'I':
		v, err := d.u32()
		return int32(v), err
	case 'F':
		v, err := d.u32()
		return math.Float32frombits(v), err
	case 'J':
		v, err := d.u64()
		return int64(v), err
	case 'D':
		v, err := d.u64()
		return math.Float64frombits(v), err
	}
	return nil, d.errf("unknown primitive type %q", t)
}

// primitives decodes n big-endian elements of size bytes each from data,
// which the caller has checked holds them.
func primitives[T any](data []byte, n, size int, decode func([]byte) T) []T {
	a := make([]T, n)
	for i := range a {
		a[i] = decode(data[size*i:])
	}
	return a
}

var elemSize = map[byte]int{'Z': 1, 'B': 1, 'C': 2, 'S': 2, 'I': 4, 'F': 4, 'J': 8, 'D': 8, 'L': 1, '[': 1}

func (d *decoder) array() (any, error) {
	at := d.pos
	c, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	if err := d.usable(c, at, "array"); err != nil {
		return nil, err
	}
	if len(c.Name) < 2 || c.Name[0] != '[' || elemSize[c.Name[1]] == 0 {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("array of class %q, which is no array class", c.Name)}
	}
	t := c.Name[1]
	h, err := d.newHandle(nil)
	if err != nil {
		return nil, err
	}
	u, err := d.u32()
	if err != nil {
		return nil, err
	}
	n := int(int32(u))
	if n < 0 {
		return nil, d.errf("array of negative length %d", n)
	}
	if n > (len(d.data)-d.pos)/elemSize[t] {
		return nil, d.errf("array claims %d elements, more than the %d bytes left hold", n, len(d.data)-d.pos)
	}
	d.elems += n
	if d.elems > d.lim.MaxArrayElems {
		return nil, d.errf("more than %d array elements", d.lim.MaxArrayElems)
	}
	var v any
	switch t {
	case 'L', '[':
		a := make([]any, n)
		d.handles[h] = a // before the elements, which may refer to it
		for i := range a {
			if a[i], err = d.content(false); err != nil {
				return nil, err
			}
		}
		return a, nil
	case 'Z':
		a := make([]bool, n)
		for i, b := range d.data[d.pos : d.pos+n] {
			a[i] = b != 0
		}
		v = a
	case 'B':
		a := make([]int8, n)
		for i, b := range d.data[d.pos : d.pos+n] {
			a[i] = int8(b)
		}
		v = a
	case 'C':
		v = primitives(d.data[d.pos:], n, 2, func(b []byte) uint16 { return binary.BigEndian.Uint16(b) })
	case 'S':
		v = primitives(d.data[d.pos:], n, 2, func(b []byte) int16 { return int16(binary.BigEndian.Uint16(b)) })
	case 'I':
		v = primitives(d.data[d.pos:], n, 4, func(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) })
	case 'F':
		v = primitives(d.data[d.pos:], n, 4, func(b []byte) float32 { return math.Float32frombits(binary.BigEndian.Uint32(b)) })
	case 'J':
		v = primitives(d.data[d.pos:], n, 8, func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) })
	case 'D':
		v = primitives(d.data[d.pos:], n, 8, func(b []byte) float64 { return math.Float64frombits(binary.BigEndian.Uint64(b)) })
	}
	d.pos += n * elemSize[t]
	d.handles[h] = v
	return v, nil
}

func (d *decoder) enum() (*Enum, error) {
	at := d.pos
	c, err := d.classDesc()
	if err != nil {
		return nil, err
	}
	if err := d.usable(c, at, "enum constant"); err != nil {
		return nil, err
	}
	e := &Enum{Class: c}
	if _, err := d.newHandle(e); err != nil {
		return nil, err
	}
	at = d.pos
	v, err := d.content(false)
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, &Error{Offset: at, Msg: fmt.Sprintf("name of a constant of enum %s is a %s, not a string", c.Name, kindOf(v))}
	}
	e.Name = s
	return e, nil
}

// modifiedUTF8 decodes Java's modified UTF-8 (DataInput.readUTF): NUL as
// two bytes, characters outside the BMP as two 3-byte surrogates.
func modifiedUTF8(b []byte) (string, bool) {
	ascii := true
	for _, c := range b {
		if c == 0 || c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), true
	}
	u := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c != 0 && c < 0x80:
			u = append(u, uint16(c))
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return "", false
			}
			u = append(u, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return "", false
			}
			u = append(u, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			return "", false
		}
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(u); i++ {
		r := rune(u[i])
		if r >= 0xD800 && r < 0xDC00 && i+1 < len(u) && u[i+1] >= 0xDC00 && u[i+1] < 0xE000 {
			r = 0x10000 + (r-0xD800)<<10 + rune(u[i+1]) - 0xDC00
			i++
		} else if r >= 0xD800 && r < 0xE000 {
			r = utf8.RuneError
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out), true
}

// kindOf names a decoded value's kind for error messages.
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case *Object:
		return "object of class " + v.Class.Name
	case *Class:
		return "class descriptor"
	case *Enum:
		return "enum constant"
	case BlockData:
		return "block data"
	}
	return fmt.Sprintf("%T", v)
}
