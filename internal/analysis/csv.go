package analysis

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// CSVHeader is the column layout of a probe's requests.csv, one row per
// request in the order of Record's fields.
var CSVHeader = []string{
	"step", "idx", "start_s", "ack_ms", "ttft_ms", "e2e_ms", "output_tokens", "input_tokens",
	"output_estimated", "status", "error", "attempts", "retry_after_ms", "ok", "warmup",
}

// CSVRow renders a record as a row of CSVHeader.
func (r Record) CSVRow() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{
		strconv.Itoa(r.Step), strconv.Itoa(r.Index), strconv.FormatFloat(r.StartS, 'f', 6, 64),
		f(r.AckMs), f(r.TTFTMs), f(r.E2EMs), strconv.Itoa(r.OutputTokens), strconv.Itoa(r.InputTokens),
		strconv.FormatBool(r.OutputEstimated), strconv.Itoa(r.Status), r.ErrorClass,
		strconv.Itoa(r.Attempts), f(r.RetryAfterMs), strconv.FormatBool(r.OK), strconv.FormatBool(r.Warmup),
	}
}

// WriteCSV writes the header and one row per record.
func WriteCSV(w io.Writer, records []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for _, r := range records {
		if err := cw.Write(r.CSVRow()); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

// IsProbeCSVHeader reports whether a header row is CSVHeader.
func IsProbeCSVHeader(header []string) bool { return slices.Equal(header, CSVHeader) }

// ReadCSV reads a requests.csv written by WriteCSV.
func ReadCSV(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(CSVHeader)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read csv header: %w", err)
	}
	if !IsProbeCSVHeader(header) {
		return nil, errors.New("not a probe requests.csv: the header differs")
	}
	var out []Record
	for line := 2; ; line++ {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read csv line %d: %w", line, err)
		}
		rec, err := parseRow(row)
		if err != nil {
			return nil, fmt.Errorf("csv line %d: %w", line, err)
		}
		out = append(out, rec)
	}
}

func parseRow(row []string) (Record, error) {
	var r Record
	var errs []error
	i := func(col int) int {
		v, err := strconv.Atoi(row[col])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", CSVHeader[col], err))
		}
		return v
	}
	f := func(col int) float64 {
		v, err := strconv.ParseFloat(row[col], 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", CSVHeader[col], err))
		}
		return v
	}
	b := func(col int) bool {
		v, err := strconv.ParseBool(row[col])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", CSVHeader[col], err))
		}
		return v
	}
	r = Record{
		Step: i(0), Index: i(1), StartS: f(2), AckMs: f(3), TTFTMs: f(4), E2EMs: f(5),
		OutputTokens: i(6), InputTokens: i(7), OutputEstimated: b(8), Status: i(9), ErrorClass: row[10],
		Attempts: i(11), RetryAfterMs: f(12), OK: b(13), Warmup: b(14),
	}
	return r, errors.Join(errs...)
}
