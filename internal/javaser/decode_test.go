package javaser

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chimesched/chime/internal/javaser/javasertest"
)

// Streams are written by hand (javasertest), for what Java never writes
// (hostile input) and for each grammar rule.
type fd = javasertest.Field

var newStream = javasertest.New

func decodeOK(t *testing.T, data []byte) any {
	t.Helper()
	v, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return v
}

func decodeErr(t *testing.T, data []byte, want string) {
	t.Helper()
	_, err := Decode(data)
	if err == nil {
		t.Fatalf("Decode gave no error, want one containing %q", want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is no *Error", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func TestPrimitiveFieldsAndHierarchy(t *testing.T) {
	b := newStream().U8(tcObject)
	b.Desc("Child", FlagSerializable, []fd{javasertest.F('B', "b", ""), javasertest.F('C', "c", ""), javasertest.F('D', "d", ""), javasertest.F('F', "f", ""), javasertest.F('I', "i", ""),
		javasertest.F('J', "j", ""), javasertest.F('S', "s", ""), javasertest.F('Z', "z", ""), javasertest.F('L', "name", "Ljava/lang/String;")}, func() {
		b.Desc("Parent", FlagSerializable, []fd{javasertest.F('I', "i", "")}, nil)
	})
	// Parent's data first, then Child's.
	b.U32(7)
	b.U8(0xFF).U16('é').U64(math.Float64bits(2.5)).U32(math.Float32bits(-1.5)).U32(0xFFFFFFFE).U64(1 << 40).U16(0x8000).U8(1)
	b.Str("x")
	o := decodeOK(t, b.Bytes()).(*Object)
	if o.ClassName() != "Child" || !o.InstanceOf("Parent") || o.InstanceOf("Other") {
		t.Fatalf("class %s, hierarchy %v", o.ClassName(), o.Data)
	}
	want := map[string]any{"b": int8(-1), "c": uint16('é'), "d": 2.5, "f": float32(-1.5), "i": int32(-2),
		"j": int64(1 << 40), "s": int16(-32768), "z": true, "name": "x"}
	for k, v := range want {
		got, ok := o.Field(k)
		if !ok || got != v {
			t.Errorf("field %s = %#v, %v; want %#v", k, got, ok, v)
		}
	}
	if v := o.ClassData("Parent").Values[0]; v != int32(7) {
		t.Errorf("Parent.i = %v, want 7 (hidden by Child.i)", v)
	}
	if _, err := FieldAs[string](o, "i"); err == nil || !strings.Contains(err.Error(), "Child.i") {
		t.Errorf("FieldAs[string] of an int: %v", err)
	}
	if _, err := FieldAs[int32](o, "missing"); err == nil {
		t.Error("FieldAs of a missing field gave no error")
	}
}

func TestStringsAndModifiedUTF8(t *testing.T) {
	// NUL as C0 80, é as two bytes, an emoji as two 3-byte surrogates.
	s := string([]byte{'a', 0xC0, 0x80, 0xC3, 0xA9, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80})
	b := newStream().U8(tcString).UTF(s)
	if got := decodeOK(t, b.Bytes()); got != "a\x00é😀" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("z", 70000)
	b = newStream().U8(tcLongString).U64(uint64(len(long)))
	b.WriteString(long)
	if got := decodeOK(t, b.Bytes()); got != long {
		t.Errorf("long string of %d bytes", len(got.(string)))
	}
	decodeErr(t, newStream().U8(tcString).UTF(string([]byte{0xC3})).Bytes(), "not modified UTF-8")
	decodeErr(t, newStream().U8(tcString).UTF(string([]byte{0x00})).Bytes(), "not modified UTF-8")
	// An unpaired surrogate is kept as U+FFFD.
	if got := decodeOK(t, newStream().U8(tcString).UTF(string([]byte{0xED, 0xA0, 0xBD})).Bytes()); got != "\uFFFD" {
		t.Errorf("unpaired surrogate: %q", got)
	}
}

func TestArrays(t *testing.T) {
	cases := []struct {
		class string
		elems []byte
		n     uint32
		want  any
	}{
		{"[Z", []byte{1, 0}, 2, []bool{true, false}},
		{"[B", []byte{0xFF, 1}, 2, []int8{-1, 1}},
		{"[C", []byte{0, 'a'}, 1, []uint16{'a'}},
		{"[S", []byte{0xFF, 0xFE}, 1, []int16{-2}},
		{"[I", []byte{0, 0, 0, 5}, 1, []int32{5}},
		{"[F", []byte{0x3F, 0x80, 0, 0}, 1, []float32{1}},
		{"[J", []byte{0, 0, 0, 0, 0, 0, 0, 9}, 1, []int64{9}},
		{"[D", []byte{0x3F, 0xF0, 0, 0, 0, 0, 0, 0}, 1, []float64{1}},
		{"[I", nil, 0, []int32{}},
	}
	for _, c := range cases {
		b := newStream().U8(tcArray).Desc(c.class, FlagSerializable, nil, nil).U32(c.n).U8(c.elems...)
		if got := decodeOK(t, b.Bytes()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.class, got, c.want)
		}
	}
	// An object array that holds itself and a string twice (a back-reference).
	b := newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(3)
	// handles: 0 class desc, 1 array, 2 "s"
	b.Ref(1).Str("s").Ref(2)
	a := decodeOK(t, b.Bytes()).([]any)
	if len(a) != 3 || a[1] != "s" || a[2] != "s" {
		t.Fatalf("got %#v", a)
	}
	if inner, ok := a[0].([]any); !ok || &inner[0] != &a[0] {
		t.Errorf("element 0 is not the array itself: %T", a[0])
	}
	decodeErr(t, newStream().U8(tcArray).Desc("Foo", FlagSerializable, nil, nil).U32(0).Bytes(), "no array class")
	decodeErr(t, newStream().U8(tcArray).Desc("[I", FlagSerializable, nil, nil).U32(0xFFFFFFFF).Bytes(), "negative length")
}

func TestHugeArrayLengthFailsFast(t *testing.T) {
	b := newStream().U8(tcArray).Desc("[J", FlagSerializable, nil, nil).U32(0x7FFFFFFF).U64(1)
	decodeErr(t, b.Bytes(), "array claims 2147483647 elements")
	b = newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(1 << 30)
	decodeErr(t, b.Bytes(), "array claims")
	b = newStream().U8(tcLongString).U64(1 << 62)
	decodeErr(t, b.Bytes(), "string of")
	b = newStream().U8(tcLongString).U64(math.MaxUint64)
	decodeErr(t, b.Bytes(), "string of")
	// Within the input but over the limit on elements.
	b = newStream().U8(tcArray).Desc("[Z", FlagSerializable, nil, nil).U32(1000).U8(make([]byte, 1000)...)
	if _, err := DecodeWith(b.Bytes(), Limits{MaxInput: 1 << 20, MaxDepth: 10, MaxObjects: 10, MaxArrayElems: 999}); err == nil ||
		!strings.Contains(err.Error(), "more than 999 array elements") {
		t.Errorf("array element limit: %v", err)
	}
}

func TestCyclesAndReferences(t *testing.T) {
	// An object whose field is itself: handles 0 class desc, 1 "LNode;", 2 the object.
	b := newStream().U8(tcObject).Desc("Node", FlagSerializable, []fd{javasertest.F('L', "next", "LNode;")}, nil).Ref(2)
	o := decodeOK(t, b.Bytes()).(*Object)
	if next, _ := o.Field("next"); next != o {
		t.Errorf("next = %v, want the object itself", next)
	}
	decodeErr(t, newStream().Ref(0).Bytes(), "does not exist")
	decodeErr(t, newStream().U8(tcReference).U32(5).Bytes(), "does not exist")
	b = newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(1)
	b.U8(tcObject).Ref(1) // handle 1 is the array, not a class descriptor
	decodeErr(t, b.Bytes(), "where a class descriptor was expected")
}

func TestClassHierarchyCycleRefused(t *testing.T) {
	// Class A whose superclass is A itself (handle 0, still being read).
	b := newStream().U8(tcObject).Desc("A", FlagSerializable, nil, func() {})
	b.Ref(0)
	decodeErr(t, b.Bytes(), "its own superclass")
	// An object of class A inside A's own annotations.
	b = newStream().U8(tcObject).U8(tcClassDesc).UTF("A").U64(1).U8(FlagSerializable).U16(0)
	b.U8(tcObject).Ref(0)
	decodeErr(t, b.Bytes(), "inside that class's own descriptor")
}

func TestLongHierarchyRefused(t *testing.T) {
	// Each class defined at top level with the previous as superclass, so
	// no nesting: only the hierarchy limit stops it.
	b := newStream()
	b.Desc("C0", FlagSerializable, nil, nil)
	for i := 1; i < 150; i++ {
		b.Desc("C", FlagSerializable, nil, func() { b.Ref(i - 1) })
	}
	_, err := DecodeAll(b.Bytes(), DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "superclasses") {
		t.Errorf("got %v", err)
	}
}

func TestWriteObjectDataAndStream(t *testing.T) {
	// A class with writeObject: a default field, then an int split over
	// two block-data records, a string, and a long.
	b := newStream().U8(tcObject).Desc("W", FlagSerializable|FlagWriteMethod, []fd{javasertest.F('I', "size", "")}, nil)
	b.U32(3)
	b.U8(tcBlockData, 2, 0, 0).U8(tcBlockDataLong).U32(2).U8(0, 9)
	b.Str("obj")
	b.U8(tcBlockData, 8).U64(1234)
	b.U8(tcEndBlockData)
	o := decodeOK(t, b.Bytes()).(*Object)
	cd := o.ClassData("W")
	if len(cd.Annotations) != 3 {
		t.Fatalf("annotations %#v: want block data joined into one", cd.Annotations)
	}
	s := o.Stream("W")
	n, _ := s.ReadInt32()
	v, _ := s.ReadObject()
	l, err := s.ReadInt64()
	if n != 9 || v != "obj" || l != 1234 || err != nil {
		t.Errorf("stream read %d, %v, %d, %v", n, v, l, err)
	}
	if _, err := s.ReadInt32(); err == nil {
		t.Error("read past the end gave no error")
	}
	s = o.Stream("W")
	if _, err := s.ReadObject(); err == nil || !strings.Contains(err.Error(), "primitive data where an object") {
		t.Errorf("object before unread primitives: %v", err)
	}
	if _, err := o.Stream("Nope").ReadInt32(); err == nil {
		t.Error("stream of a class not in the hierarchy gave no error")
	}
}

// TestManyTinyBlocks: a writer may split block data anywhere; joining
// 200,000 one-byte blocks must not copy the growing join each time (it
// did, and took 34 s; now a tenth of a second), nor write into the input.
func TestManyTinyBlocks(t *testing.T) {
	b := newStream().U8(tcObject).Desc("W", FlagSerializable|FlagWriteMethod, nil, nil)
	b.U8(tcBlockData, 2, 1, 2).U8(tcBlockData, 1, 3).Str("s").U8(tcBlockData, 1, 4)
	for range 200_000 {
		b.U8(tcBlockData, 1, 7)
	}
	b.U8(tcEndBlockData)
	in := bytes.Clone(b.Bytes())
	o := decodeOK(t, b.Bytes()).(*Object)
	ann := o.Data[0].Annotations
	if len(ann) != 3 || !bytes.Equal(ann[0].(BlockData), []byte{1, 2, 3}) || ann[1] != "s" {
		t.Fatalf("annotations start %v", ann[:min(3, len(ann))])
	}
	if tail := ann[2].(BlockData); len(tail) != 200_001 || tail[0] != 4 || tail[200_000] != 7 {
		t.Errorf("joined tail of %d bytes", len(tail))
	}
	if !bytes.Equal(in, b.Bytes()) {
		t.Error("decoding changed its input")
	}
}

func TestExternalizable(t *testing.T) {
	b := newStream().U8(tcObject).Desc("E", FlagExternalizable|FlagBlockData, nil, nil)
	b.U8(tcBlockData, 4).U32(77).Str("ext").U8(tcEndBlockData)
	o := decodeOK(t, b.Bytes()).(*Object)
	s := o.Stream("E")
	if n, _ := s.ReadInt32(); n != 77 {
		t.Errorf("got %d", n)
	}
	if v, _ := s.ReadObject(); v != "ext" {
		t.Errorf("got %v", v)
	}
	decodeErr(t, newStream().U8(tcObject).Desc("E", FlagExternalizable, nil, nil).Bytes(), "protocol version 1")
	decodeErr(t, newStream().U8(tcObject).Desc("E", FlagExternalizable|FlagSerializable, nil, nil).Bytes(), "both serializable and externalizable")
	decodeErr(t, newStream().U8(tcObject).Desc("N", 0, nil, nil).Bytes(), "not serializable")
}

func TestEnumClassProxyReset(t *testing.T) {
	b := newStream()
	b.U8(tcEnum).Desc("Color", FlagSerializable|FlagEnum, nil, func() {
		b.Desc("java.lang.Enum", FlagSerializable|FlagEnum, nil, nil)
	}).Str("RED")
	if e := decodeOK(t, b.Bytes()).(*Enum); e.Name != "RED" || e.Class.Name != "Color" || e.Class.Super.Name != "java.lang.Enum" {
		t.Errorf("got %+v", e)
	}
	b = newStream().U8(tcEnum).Desc("Color", FlagSerializable|FlagEnum, nil, nil).U8(tcNull)
	decodeErr(t, b.Bytes(), "not a string")

	b = newStream().U8(tcClass).Desc("java.lang.String", FlagSerializable, nil, nil)
	if c := decodeOK(t, b.Bytes()).(*Class); c.Name != "java.lang.String" {
		t.Errorf("got %+v", c)
	}

	b = newStream().U8(tcObject).U8(tcProxyClassDesc).U32(2).UTF("java.lang.Runnable").UTF("java.io.Serializable").U8(tcEndBlockData)
	b.Desc("java.lang.reflect.Proxy", FlagSerializable, []fd{javasertest.F('L', "h", "Ljava/lang/reflect/InvocationHandler;")}, nil)
	b.U8(tcNull)
	o := decodeOK(t, b.Bytes()).(*Object)
	if !o.Class.Proxy || len(o.Class.Interfaces) != 2 || !o.InstanceOf("java.lang.reflect.Proxy") {
		t.Errorf("proxy: %+v", o.Class)
	}

	// A reset between two top-level objects forgets the handles.
	b = newStream().Str("a").U8(tcReset).Ref(0)
	if _, err := DecodeAll(b.Bytes(), DefaultLimits); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("reference after reset: %v", err)
	}
	b = newStream().Str("a").U8(tcReset).Str("b")
	if all, err := DecodeAll(b.Bytes(), DefaultLimits); err != nil || !reflect.DeepEqual(all, []any{"a", "b"}) {
		t.Errorf("after reset: %v, %v", all, err)
	}
	b = newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(1).U8(tcReset).U8(tcNull)
	decodeErr(t, b.Bytes(), "reset inside an object")
}

func TestBadStreams(t *testing.T) {
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":          {nil, "too short"},
		"no magic":       {[]byte("hello world"), "no stream magic"},
		"version":        {[]byte{0xAC, 0xED, 0, 4, tcNull}, "version 4"},
		"header only":    {newStream().Bytes(), "no object after the stream header"},
		"unknown code":   {newStream().U8(0x42).Bytes(), "unknown type code"},
		"exception":      {newStream().U8(tcException).Bytes(), "TC_EXCEPTION"},
		"block at top":   {newStream().U8(tcBlockData, 1, 0).Bytes(), "block data where an object was expected"},
		"end block":      {newStream().U8(tcEndBlockData).Bytes(), "end of block data"},
		"bad field type": {newStream().U8(tcObject).Desc("X", FlagSerializable, []fd{javasertest.F('Q', "q", "")}, nil).Bytes(), "unknown type code 'Q'"},
		"field type not a string": {newStream().U8(tcObject).U8(tcClassDesc).UTF("X").U64(1).U8(FlagSerializable).U16(1).
			U8('L').UTF("f").U8(tcNull).Bytes(), "not a string"},
		"many fields":           {newStream().U8(tcObject).U8(tcClassDesc).UTF("X").U64(1).U8(FlagSerializable).U16(60000).Bytes(), "claims 60000 fields"},
		"many proxy interfaces": {newStream().U8(tcObject).U8(tcProxyClassDesc).U32(1 << 30).Bytes(), "interfaces"},
		"object of enum":        {newStream().U8(tcObject).Desc("E", FlagSerializable|FlagEnum, nil, nil).Bytes(), "enum class"},
		"null class":            {newStream().U8(tcObject).U8(tcNull).Bytes(), "null class descriptor"},
		"long block":            {newStream().U8(tcObject).Desc("W", FlagSerializable|FlagWriteMethod, nil, nil).U8(tcBlockDataLong).U32(0x80000000).Bytes(), "negative block data length"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { decodeErr(t, c.data, c.want) })
	}
	if _, err := DecodeWith(make([]byte, 100), Limits{MaxInput: 10, MaxDepth: 1, MaxObjects: 1, MaxArrayElems: 1}); err == nil {
		t.Error("input over MaxInput gave no error")
	}
}

func TestNestingBomb(t *testing.T) {
	// 100,000 arrays, each the only element of the one before.
	b := newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(1)
	for range 100_000 {
		b.U8(tcArray).Ref(0).U32(1)
	}
	b.U8(tcNull)
	decodeErr(t, b.Bytes(), "nested deeper than 100")
	// Superclass descriptors nested inside each other.
	b = newStream().U8(tcObject)
	for range 10_000 {
		b.U8(tcClassDesc).UTF("X").U64(1).U8(FlagSerializable).U16(0).U8(tcEndBlockData)
	}
	decodeErr(t, b.Bytes(), "nested deeper")
}

func TestObjectLimit(t *testing.T) {
	b := newStream().U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(100)
	for range 100 {
		b.Str("s")
	}
	_, err := DecodeWith(b.Bytes(), Limits{MaxInput: 1 << 20, MaxDepth: 10, MaxObjects: 50, MaxArrayElems: 1000})
	if err == nil || !strings.Contains(err.Error(), "more than 50 objects") {
		t.Errorf("got %v", err)
	}
}

// TestDeepClassObjectsCounted: 20,000 objects of a class with 99
// superclasses are two million ClassData (100 MB) from 120 KB of input;
// they count against MaxObjects.
func TestDeepClassObjectsCounted(t *testing.T) {
	b := newStream()
	b.Desc("C0", FlagSerializable, nil, nil)
	for i := 1; i < 100; i++ {
		b.Desc("C", FlagSerializable, nil, func() { b.Ref(i - 1) })
	}
	b.U8(tcArray).Desc("[Ljava.lang.Object;", FlagSerializable, nil, nil).U32(20_000)
	for range 20_000 {
		b.U8(tcObject).Ref(99)
	}
	_, err := DecodeAll(b.Bytes(), DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "more than 1048576 objects") {
		t.Errorf("got %v", err)
	}
	// Zero limits are the defaults.
	if _, err := DecodeAll(b.Bytes(), Limits{}); err == nil || !strings.Contains(err.Error(), "more than 1048576 objects") {
		t.Errorf("zero limits: %v", err)
	}
}

// fixtures are the Quartz blobs real Java wrote (quartzimport's testdata).
func fixtures(t testing.TB) map[string][]byte {
	files, err := filepath.Glob(filepath.Join("..", "..", "quartzimport", "testdata", "blobs", "*.bin"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// TestQuartzFixtures decodes what real Java wrote, and every prefix of it:
// a truncated blob is an error, never a panic or a partial value.
func TestQuartzFixtures(t *testing.T) {
	for name, b := range fixtures(t) {
		if !bytes.HasPrefix(b, []byte{0xAC, 0xED}) {
			continue // Properties text
		}
		v, err := Decode(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, ok := v.(*Object); !ok {
			t.Errorf("%s: a %T", name, v)
		}
		if all, err := DecodeAll(b, DefaultLimits); err != nil || len(all) != 1 {
			t.Errorf("%s: DecodeAll gave %d contents, %v", name, len(all), err)
		}
		// Every cut of the small ones; 500 cuts of the large one (each
		// decode is linear, all of them quadratic).
		step := max(1, len(b)/500)
		for n := 0; n < len(b); n += step {
			if _, err := Decode(b[:n]); err == nil {
				t.Errorf("%s cut to %d bytes decoded without error", name, n)
				break
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range fixtures(f) {
		// Not the 76 KB map: the fuzzer minimizes each new find byte by
		// byte, which on such a seed stalls the run for minutes.
		if len(b) <= 8<<10 {
			f.Add(b)
		}
	}
	b := newStream().U8(tcObject).Desc("W", FlagSerializable|FlagWriteMethod, []fd{javasertest.F('I', "size", ""), javasertest.F('L', "o", "Ljava/lang/Object;")}, nil)
	b.U32(3).Ref(2).U8(tcBlockData, 2, 0, 0).Str("x").U8(tcEndBlockData)
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeAll(data, DefaultLimits)
		v, err := Decode(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(data) {
				t.Fatalf("error %v has no offset within the input", err)
			}
			return
		}
		walk(v, map[any]bool{}, 0)
	})
}

// walk visits a decoded tree once per object, as a consumer would, to
// catch values a consumer could not handle (nil classes, short values).
func walk(v any, seen map[any]bool, depth int) {
	switch v := v.(type) {
	case *Object:
		if seen[v] {
			return
		}
		seen[v] = true
		_ = v.ClassName()
		for _, cd := range v.Data {
			if cd.Class == nil || (cd.Values != nil && len(cd.Values) != len(cd.Class.Fields)) {
				panic("class data without its class or values")
			}
			for _, x := range cd.Values {
				walk(x, seen, depth+1)
			}
			for _, x := range cd.Annotations {
				walk(x, seen, depth+1)
			}
		}
	case []any:
		if len(v) > 0 && seen[&v[0]] {
			return
		}
		if len(v) > 0 {
			seen[&v[0]] = true
		}
		for _, x := range v {
			walk(x, seen, depth+1)
		}
	case *Enum:
		_ = v.Class.Name
	}
}
