package measure

import (
	"slices"
	"testing"
)

func TestGroupRecords(t *testing.T) {
	recs := []Record{{Step: 2, Index: 0}, {Step: 1, Index: 0}, {Step: 2, Index: 1}, {Step: 1, Index: 1}, {Step: 4, Index: 0}}
	by := GroupRecords(recs, func(r *Record) int { return r.Step })
	if len(by) != 3 {
		t.Fatalf("%d groups, want 3", len(by))
	}
	for step, want := range map[int][]int{1: {0, 1}, 2: {0, 1}, 4: {0}} {
		var got []int
		for _, r := range by[step] {
			if r.Step != step {
				t.Errorf("step %d holds a row of step %d", step, r.Step)
			}
			got = append(got, r.Index)
		}
		if !slices.Equal(got, want) {
			t.Errorf("step %d: indices %v, want %v (the rows' order)", step, got, want)
		}
	}
	one := recs[:1]
	if g := GroupRecords(one, func(r *Record) int { return r.Step })[2]; &g[0] != &one[0] {
		t.Error("one key: the rows were copied")
	}
}
