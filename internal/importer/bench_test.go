package importer

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/plannerdev/planner/internal/measure"
)

// workshopRows is a workshop ramp CSV of n rows, all at concurrency 1.
func workshopRows(n int) []byte {
	var b bytes.Buffer
	b.WriteString("step,idx,ok,code,ms,wall_s\n")
	for range n {
		b.WriteString("1,0,True,200,5.0,8.00\n")
	}
	return b.Bytes()
}

// BenchmarkImportWorkshopCSV imports a workshop ramp CSV of one step,
// the shape of a large upload to POST /v1/analyses.
func BenchmarkImportWorkshopCSV(b *testing.B) {
	for _, n := range []int{100_000, 500_000, 2_500_000} {
		data := workshopRows(n)
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Import("a.csv", data, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestImportWorkshopCSVAllocatesPerRow holds a large workshop ramp's
// import to a bounded number of bytes allocated per row: a row's record
// (measure.Record) and its share of the summaries, not copies of every
// record per step, per run and per summary.
func TestImportWorkshopCSVAllocatesPerRow(t *testing.T) {
	const n = 100_000
	data := workshopRows(n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	imp, err := Import("a.csv", data, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(imp.Records) != n {
		t.Fatalf("%d records, want %d", len(imp.Records), n)
	}
	perRow := float64(after.TotalAlloc-before.TotalAlloc) / n
	if limit := 1.5 * float64(unsafe.Sizeof(measure.Record{})); perRow > limit {
		t.Errorf("%.0f bytes allocated per row, want at most %.0f (1.5 records)", perRow, limit)
	}
}
