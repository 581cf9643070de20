// Package javaser decodes the Java Object Serialization Stream Protocol
// (what java.io.ObjectOutputStream writes: magic 0xACED, version 5) into a
// tree of Go values, without any Java class at hand. chime reads Quartz's
// JDBC job store with it: calendars and job data maps are serialized Java
// objects in BLOB columns.
//
//	v, err := javaser.Decode(blob)
//	o, _ := v.(*javaser.Object)
//	desc, _ := javaser.FieldAs[string](o, "description")
//
// What the stream's contents become:
//
//   - an object (TC_OBJECT): *Object, with one ClassData per serializable
//     class of its hierarchy, from the topmost superclass down: the
//     values of that class's serializable fields, and the data its
//     writeObject or writeExternal method wrote (Annotations: BlockData
//     and objects, in order; read them with Object.Stream);
//   - a string: string (modified UTF-8 decoded; an unpaired surrogate
//     becomes U+FFFD);
//   - primitive fields: bool, int8 (byte), uint16 (char), int16, int32,
//     int64, float32, float64;
//   - an array: []bool, []int8, []uint16, []int16, []int32, []int64,
//     []float32, []float64 for primitive arrays, []any for object arrays;
//   - an enum constant: *Enum; a class (TC_CLASS) or a class descriptor:
//     *Class; null: nil.
//
// Back-references share the value: the same *Object (or slice) appears
// wherever the stream refers to it, so a tree may have cycles (an object
// or array is registered before its contents, as in Java, so it can hold
// itself) and a small stream may refer to one large value many times;
// walk it with both in mind, and bound what a walk copies out.
//
// The input is hostile (a BLOB someone else's program wrote): Decode
// bounds the nesting depth, the number of objects, the total length of
// arrays and a class hierarchy's length (Limits), checks every length
// against the bytes left and every handle against the table, never
// panics and never loops: the work is linear in the input. Errors name
// the byte offset where decoding stopped.
//
// It imports only the standard library.
package javaser
