package quartzimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chimesched/chime/internal/javaser/javasertest"
)

// hostileJobData are JobDataMaps of a few bytes to a few dozen kilobytes
// that a converter without one budget for everything it builds expands to
// gigabytes (issue 22).
func hostileJobData() map[string][]byte {
	return map[string][]byte{
		// 131 bytes.
		"self-array": selfArray(),
		// 56 KB saying 6.5×10^10 values.
		"shared-arrays": sharedArrays(4000, 4000, 4096),
		// 60 KB saying 180 MB.
		"shared-string": sharedString(30_000, 6000),
	}
}

// Each is a java.util.HashMap with one entry, "a". Handles: 0 the map's
// descriptor, 1 the map, 2 "a", 3 Object[]'s descriptor, 4 the array.

// selfArray: an Object[] whose one element is itself. Java's stream
// registers an array before its elements, so this is a real stream.
func selfArray() []byte {
	s := javasertest.New()
	return s.HashMap(1, func() {
		s.Str("a").ObjectArray(-1, 1).Ref(4)
	}).Bytes()
}

// sharedArrays: Object[outer] of one Object[inner] (5) of one int[ints]
// (6 its descriptor, 7).
func sharedArrays(outer, inner, ints int) []byte {
	s := javasertest.New()
	return s.HashMap(1, func() {
		s.Str("a").ObjectArray(-1, outer).ObjectArray(3, inner)
		s.U8(javasertest.TCArray).Desc("[I", 0x02, nil, nil).U32(uint32(ints)).Write(make([]byte, 4*ints))
		for range inner - 1 {
			s.Ref(7)
		}
		for range outer - 1 {
			s.Ref(5)
		}
	}).Bytes()
}

// sharedString: Object[refs] of one string of n bytes (5).
func sharedString(n, refs int) []byte {
	s := javasertest.New()
	return s.HashMap(1, func() {
		s.Str("a").ObjectArray(-1, refs).Str(strings.Repeat("x", n))
		for range refs - 1 {
			s.Ref(5)
		}
	}).Bytes()
}

// TestHostileJobDataBounded converts each hostile map as the importer does
// (decode, convert, JSON) and bounds what that allocates: an error, and
// at most 16 MiB, where the converter without its budget took gigabytes
// (or the machine's memory).
func TestHostileJobDataBounded(t *testing.T) {
	want := map[string]string{
		"self-array":    `key "a"[0]: an array that contains itself`,
		"shared-arrays": "the budget of a blob of",
		"shared-string": "the budget of a blob of",
	}
	for name, blob := range hostileJobData() {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			params, err := jobData(blob)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of blob: %d bytes allocated, %d of JSON, error %v", len(blob), alloc, len(params), err)
			if err == nil || !strings.Contains(err.Error(), want[name]) {
				t.Errorf("error %v, want one containing %q", err, want[name])
			}
			if alloc > 16<<20 {
				t.Errorf("%d bytes allocated, more than 16 MiB", alloc)
			}
		})
	}
}

// TestDeepPathErrorIsShort: 70 maps inside each other, each under the same
// 60 KB key (one string, referred to), are too deep; the error names
// where in a line, not in the 4 MB the whole path would take.
func TestDeepPathErrorIsShort(t *testing.T) {
	s := javasertest.New()
	var level func(i int)
	level = func(i int) {
		s.HashMap(1, func() {
			if i == 0 {
				s.Str(strings.Repeat("k", 60_000)) // handle 2
			} else {
				s.Ref(2)
			}
			if i == 69 {
				s.Str("end")
			} else {
				level(i + 1)
			}
		})
	}
	level(0)
	_, err := DecodeJobDataMap(s.Bytes())
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 64") || len(err.Error()) > 2000 {
		t.Fatalf("got an error of %d bytes, want a short one saying it is nested too deep: %.300s", len(fmt.Sprint(err)), err)
	}
	t.Log(err)
}

// FuzzJobDataBudget decodes and converts job data as the importer does
// (jobData: decode, convert, JSON) and checks the budget: what comes out
// is at most 6 bytes of JSON (the longest escape of one byte, \u00XX) per
// byte of jobDataBudget of the input.
func FuzzJobDataBudget(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "blobs", "jobdata_*.bin"))
	for _, file := range files {
		// Small seeds only: the fuzzer minimizes each find byte by byte.
		if b := blob(f, filepath.Base(file)); len(b) <= 8<<10 {
			f.Add(b)
		}
	}
	f.Add(selfArray())
	f.Add(sharedArrays(8, 8, 16))
	f.Add(sharedString(64, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		params, err := jobData(data)
		if err != nil {
			return
		}
		if limit := 6 * jobDataBudget(len(data)); len(params) > limit {
			t.Fatalf("%d bytes of job data made %d bytes of JSON, more than %d", len(data), len(params), limit)
		}
	})
}

// sharedBigInteger: Object[refs] of one BigInteger of n bytes of
// magnitude. Handles: 5 BigInteger's descriptor, 6 "[B", 7 Number's
// descriptor, 8 the number, 9 byte[]'s descriptor, 10 its magnitude.
func sharedBigInteger(n, refs int) []byte {
	s := javasertest.New()
	return s.HashMap(1, func() {
		s.Str("a").ObjectArray(-1, refs).U8(javasertest.TCObject)
		s.Desc("java.math.BigInteger", 0x03, []javasertest.Field{javasertest.F('I', "signum", ""), javasertest.F('[', "magnitude", "[B")}, func() {
			s.Desc("java.lang.Number", 0x02, nil, nil)
		})
		s.U32(1).U8(javasertest.TCArray).Desc("[B", 0x02, nil, nil).U32(uint32(n)).Write(bytes.Repeat([]byte{0x7F}, n))
		s.U8(javasertest.TCEndBlockData)
		for range refs - 1 {
			s.Ref(8)
		}
	}).Bytes()
}

// TestBigNumbersBounded: a big number's decimal text costs superlinear
// time (a megabyte's takes seconds), so one is bounded by itself and many
// references to one by the budget, charged before the text is made.
func TestBigNumbersBounded(t *testing.T) {
	m, err := DecodeJobDataMap(sharedBigInteger(8, 2))
	if err != nil || len(m["a"].([]any)) != 2 || m["a"].([]any)[1] != json.Number("9187201950435737471") {
		t.Fatalf("small BigIntegers: %v, %v", m, err)
	}
	if _, err := DecodeJobDataMap(sharedBigInteger(20_000, 1)); err == nil || !strings.Contains(err.Error(), `key "a"[0]: a number of 20000 bytes, more than the 16384 chime reads`) {
		t.Errorf("a 20 KB BigInteger: %v", err)
	}
	if _, err := DecodeJobDataMap(sharedBigInteger(16<<10, 3000)); err == nil || !strings.Contains(err.Error(), "the budget of a blob") {
		t.Errorf("a 16 KB BigInteger 3,000 times: %v", err)
	}
}
