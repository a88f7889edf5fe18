package cleanup

import (
	"slices"
	"testing"
)

func TestStackRunsLastFirstOnce(t *testing.T) {
	var s Stack
	var got []int
	for i := range 3 {
		s.Defer(func() { got = append(got, i) })
	}
	s.Run()
	s.Run()
	if !slices.Equal(got, []int{2, 1, 0}) {
		t.Fatalf("ran %v, want [2 1 0] once", got)
	}
}
