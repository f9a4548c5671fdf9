package importer

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// AIPerf's profile_export_aiperf.csv and GenAI-Perf's
// profile_export_genai_perf.csv hold the same summary as their JSON
// exports, as CSV tables: one of per-request metrics with a header
// "Metric,avg,min,max,pNN…" and one of scalars with "Metric,Value", each row
// named "Name (unit)". AIPerf lists percentiles ascending (p1 … p99) and adds
// std; GenAI-Perf lists them descending (p99 … p25). GenAI-Perf writes
// values with thousands separators ("1,234.56"). Neither CSV records the
// concurrency, so it is estimated by Little's Law.

func isMetricHeader(header []string) bool {
	return len(header) >= 2 && strings.EqualFold(strings.TrimSpace(header[0]), "Metric")
}

func looksAIPerfCSV(header []string) bool {
	return isMetricHeader(header) && (slices.Contains(header, "std") || slices.Contains(header, "p1"))
}

func looksGenAIPerfCSV(header []string) bool {
	return isMetricHeader(header) && !looksAIPerfCSV(header) && slices.Contains(header, "avg")
}

// readMetricTables reads every table of a metric CSV into a metricSet keyed
// like the JSON exports ("Time to First Token (ms)" → time_to_first_token).
func readMetricTables(data []byte) (metricSet, error) {
	rows, err := readCSV(data)
	if err != nil {
		return nil, err
	}
	ms := metricSet{}
	var header []string
	for i, row := range rows {
		line := i + 1
		if len(row) == 0 || (len(row) == 1 && strings.TrimSpace(row[0]) == "") {
			continue
		}
		if isMetricHeader(row) {
			header = make([]string, len(row))
			for j, h := range row {
				header[j] = strings.ToLower(strings.TrimSpace(h))
			}
			continue
		}
		if header == nil {
			return nil, fmt.Errorf("line %d comes before any Metric header", line)
		}
		if len(row) != len(header) {
			return nil, fmt.Errorf("line %d has %d fields where its table has %d (truncated file?)", line, len(row), len(header))
		}
		name, unit := splitUnit(row[0])
		stats := obj{"unit": unit}
		for j, col := range header[1:] {
			cell := strings.ReplaceAll(strings.TrimSpace(row[j+1]), ",", "")
			if cell == "" || strings.EqualFold(cell, "N/A") {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: %s %s: %q is not a number", line, row[0], col, row[j+1])
			}
			if col == "value" {
				col = "avg"
			}
			stats[col] = v
		}
		ms[name] = stats
	}
	if len(ms) == 0 {
		return nil, errors.New("has no metric rows")
	}
	return ms, nil
}

// splitUnit turns "Time To First Token (ns)" into ("time_to_first_token", "ns").
func splitUnit(cell string) (name, unit string) {
	cell = strings.TrimSpace(cell)
	if i := strings.LastIndex(cell, "("); i >= 0 && strings.HasSuffix(cell, ")") {
		unit = strings.TrimSpace(cell[i+1 : len(cell)-1])
		cell = strings.TrimSpace(cell[:i])
	}
	return strings.Join(strings.Fields(strings.ToLower(cell)), "_"), unit
}

func parseAIPerfCSV(name string, data []byte) (*part, error) {
	ms, err := readMetricTables(data)
	if err != nil {
		return nil, err
	}
	r, notes, err := summaryRun(ms)
	if err != nil {
		return nil, err
	}
	if okF, has := ms.scalar("request_count"); has {
		okN, valid := count(okF)
		errF, _ := ms.scalar("error_request_count")
		errN, validErr := count(errF)
		if !valid || !validErr {
			return nil, errors.New("request counts are not whole numbers")
		}
		r.countsKnown, r.ok, r.errs, r.requests = true, okN, errN, okN+errN
		if errN > 0 {
			notes = append(notes, "failed requests count as errors: the CSV does not give their codes (the JSON export does)")
		}
	}
	if dur, ok, err := ms.seconds("benchmark_duration"); err != nil {
		return nil, err
	} else if ok {
		r.wallS = dur
	}
	notes = append(notes, "the CSV export has no concurrency: it is estimated (import profile_export_aiperf.json for the configured one)")
	p := &part{source: Source{Tool: "aiperf", Version: "csv export"}, runs: []*run{r}, pairKey: filepath.Dir(name)}
	p.notes = append(append(p.notes, aiperfSummaryNotes...), notes...)
	return p, nil
}

func parseGenAIPerfCSV(_ string, data []byte) (*part, error) {
	ms, err := readMetricTables(data)
	if err != nil {
		return nil, err
	}
	r, notes, err := summaryRun(ms)
	if err != nil {
		return nil, err
	}
	p := &part{source: Source{Tool: "genai-perf", Version: "csv export"}, runs: []*run{r}}
	p.notes = append(p.notes, "TTFT, TPOT (GenAI-Perf's inter token latency) and E2E (request latency) taken as GenAI-Perf reports them")
	if unit, _ := ms["time_to_first_token"].str("unit"); unit == "ns" {
		p.notes = append(p.notes, "times converted from nanoseconds; in this early layout GenAI-Perf's inter token latency came from the gaps between responses per token, close to but not exactly (E2E − TTFT)/(output tokens − 1)")
	}
	p.notes = append(p.notes, notes...)
	p.notes = append(p.notes, "the CSV export has no concurrency: it is estimated (the JSON export records it)")
	return p, nil
}
