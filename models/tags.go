package models

import (
	"fmt"
	"slices"
	"strings"
)

// Bounds of node tags and of required tags (nodes.tags, required_tags).
const (
	MaxTags   = 32
	MaxTagLen = 64
	// MaxTagsText bounds the text of a tags column before it is parsed:
	// MaxTags tags of MaxTagLen and their commas fit with room to spare.
	MaxTagsText = 2100
)

// ParseTags reads a tags value: tags separated by commas, each 1 to
// MaxTagLen of a-z, 0-9, '.', '_', ':' and '-', at most MaxTags; white
// space around a comma is ignored, "" is no tags. It returns them sorted,
// without duplicates, or says what is wrong, quoting at most the start of
// a long value. The same rule reads node.tags, the API's and CLI's
// required_tags, and the rows plain SQL wrote.
func ParseTags(s string) ([]string, error) {
	if len(s) > MaxTagsText {
		return nil, fmt.Errorf("tags are %d bytes, more than %d", len(s), MaxTagsText)
	}
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if err := CheckTag(t); err != nil {
			return nil, err
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > MaxTags {
		return nil, fmt.Errorf("%d tags, more than %d", len(out), MaxTags)
	}
	slices.Sort(out)
	return out, nil
}

// CheckTag says what is wrong with one tag; nil when it is one.
func CheckTag(t string) error {
	switch {
	case t == "":
		return fmt.Errorf("empty tag (two commas in a row, or one at an end)")
	case len(t) > MaxTagLen:
		return fmt.Errorf("tag %q… is %d bytes, more than %d", t[:16], len(t), MaxTagLen)
	}
	for _, r := range t {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && !strings.ContainsRune("._:-", r) {
			return fmt.Errorf("tag %q holds %q: tags are a-z, 0-9, '.', '_', ':' and '-'", t, r)
		}
	}
	return nil
}

// NormalizeTags returns s parsed and written back sorted, comma-separated:
// the form chime stores.
func NormalizeTags(s string) (string, error) {
	tags, err := ParseTags(s)
	if err != nil {
		return "", err
	}
	return strings.Join(tags, ","), nil
}

// MissingTags returns the tags of required that have lacks, in order.
func MissingTags(required, have []string) []string {
	var out []string
	for _, t := range required {
		if !slices.Contains(have, t) {
			out = append(out, t)
		}
	}
	return out
}
