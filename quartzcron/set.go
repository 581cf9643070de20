package quartzcron

import "sort"

// intSet is a sorted set of ints, for the TreeSet<Integer> lookups Quartz
// makes (tailSet(v).first(), first(), last(), contains).
type intSet struct{ v []int }

func (s *intSet) add(x int) {
	i := sort.SearchInts(s.v, x)
	if i < len(s.v) && s.v[i] == x {
		return
	}
	s.v = append(s.v, 0)
	copy(s.v[i+1:], s.v[i:])
	s.v[i] = x
}

func (s *intSet) contains(x int) bool {
	i := sort.SearchInts(s.v, x)
	return i < len(s.v) && s.v[i] == x
}

// ceil is the smallest element >= x.
func (s *intSet) ceil(x int) (int, bool) {
	i := sort.SearchInts(s.v, x)
	if i == len(s.v) {
		return 0, false
	}
	return s.v[i], true
}

func (s *intSet) empty() bool { return len(s.v) == 0 }
func (s *intSet) first() int  { return s.v[0] }
func (s *intSet) last() int   { return s.v[len(s.v)-1] }
