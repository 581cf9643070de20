package models

import (
	"strings"
	"testing"
)

func TestParseTags(t *testing.T) {
	good := map[string]string{
		"":                      "",
		"  ":                    "",
		"gpu":                   "gpu",
		"zone:eu-1, gpu,gpu":    "gpu,zone:eu-1",
		"a.b_c:d-e,0":           "0,a.b_c:d-e",
		strings.Repeat("x", 64): strings.Repeat("x", 64),
	}
	for in, want := range good {
		got, err := NormalizeTags(in)
		if err != nil || got != want {
			t.Errorf("NormalizeTags(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = "t" + strings.Repeat("x", i)
	}
	bad := map[string]string{
		"my tag":                   "holds ' '",
		"GPU":                      "holds 'G'",
		"gpu,,eu":                  "empty tag",
		"gpu,":                     "empty tag",
		strings.Repeat("x", 65):    "more than 64",
		strings.Repeat("x", 10000): "more than 2100",
		strings.Join(many, ","):    "33 tags",
		"é":                        "holds 'é'",
		"gpu;eu":                   "holds ';'",
		"gpu\x00":                  "holds '\\x00'",
	}
	for in, want := range bad {
		_, err := ParseTags(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTags(%.20q…) = %v; want an error saying %q", in, err, want)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("ParseTags(%.20q…): error of %d bytes quotes too much", in, len(err.Error()))
		}
	}
	if m := MissingTags([]string{"a", "b", "c"}, []string{"b"}); strings.Join(m, ",") != "a,c" {
		t.Errorf("MissingTags = %v", m)
	}
}
