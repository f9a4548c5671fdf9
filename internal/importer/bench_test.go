package importer

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/plannerdev/planner/internal/measure"
)

// workshopRows is a workshop ramp CSV of n rows, all at concurrency 1.
func workshopRows(n int) []byte {
	var b bytes.Buffer
	b.WriteString("step,idx,ok,code,ms,wall_s\n")
	for i := range n {
		fmt.Fprintf(&b, "1,%d,True,200,5.0,8.00\n", i)
	}
	return b.Bytes()
}

// BenchmarkImportWorkshopCSV imports a workshop ramp CSV of one step,
// the shape of a large upload to POST /v1/analyses.
func BenchmarkImportWorkshopCSV(b *testing.B) {
	for _, n := range []int{100_000, 500_000, 1_000_000} {
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

// TestRowCap refuses an import of more request rows than maxRows, in a
// workshop CSV, a probe requests.csv and several files together, and
// reads one at the cap.
func TestRowCap(t *testing.T) {
	defer func(n int) { maxRows = n }(maxRows)
	maxRows = 5
	probe := func(rows int, step int) []byte {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		w.Write(measure.CSVHeader)
		for i := range rows {
			rec := measure.Record{Step: step, Index: i, StartS: float64(i), E2EMs: 10, TTFTMs: 5, OutputTokens: 3, Status: 200, Attempts: 1, OK: true}
			w.Write(rec.CSVRow())
		}
		w.Flush()
		return b.Bytes()
	}
	if _, err := Import("a.csv", workshopRows(5), Options{}); err != nil {
		t.Fatalf("5 rows at a cap of 5: %v", err)
	}
	for name, files := range map[string][]File{
		"workshop":  {{"a.csv", workshopRows(6)}},
		"probe":     {{"requests.csv", probe(6, 1)}},
		"two files": {{"run1/requests.csv", probe(3, 1)}, {"run2/requests.csv", probe(3, 2)}},
	} {
		_, err := ImportMany(files, Options{})
		if err == nil || !strings.Contains(err.Error(), "more than 5") {
			t.Errorf("%s: error %v, want one naming the cap of 5 rows", name, err)
		}
	}
}
