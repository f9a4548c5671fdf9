package measure

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// CSVHeader is the column layout of a probe's requests.csv, one row per
// request: Record's fields, with n429, the 429 answers the request met
// (Record.RateLimitedAnswers), after e2e_with_retries_ms, then the served
// model and connection columns, and the prompt cache and conversation
// columns last. Times are written to the nanosecond, so that a file read
// back measures exactly what the run measured.
var CSVHeader = append(slices.Clone(csvHeaderV3), "cached_tokens", "prefix_tokens", "task", "call")

// csvHeaderV3 is the layout of the files written before the prompt cache
// and conversation columns existed; they are still read, those fields 0.
var csvHeaderV3 = append(slices.Clone(csvHeaderV2),
	"served_model", "conn", "conn_wait_ms", "dns_ms", "connect_ms", "tls_ms", "ttfb_ms")

// csvHeaderV2 is the layout of the files written before the served model
// and connection columns existed; they are still read, those fields
// empty.
var csvHeaderV2 = append(slices.Clone(csvHeaderV1), "e2e_with_retries_ms", "n429", "rate_rps", "refine")

// csvHeaderV1 is the layout of the files written before the retry columns
// existed; they are still read, their E2E taken as the time with retries.
var csvHeaderV1 = []string{
	"step", "idx", "start_s", "ack_ms", "ttft_ms", "e2e_ms", "output_tokens", "input_tokens",
	"output_estimated", "status", "error", "attempts", "retry_after_ms", "ok", "warmup",
}

// CSVRow renders a record as a row of CSVHeader.
func (r Record) CSVRow() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	return []string{
		strconv.Itoa(r.Step), strconv.Itoa(r.Index), strconv.FormatFloat(r.StartS, 'f', 9, 64),
		f(r.AckMs), f(r.TTFTMs), f(r.E2EMs), strconv.Itoa(r.OutputTokens), strconv.Itoa(r.InputTokens),
		strconv.FormatBool(r.OutputEstimated), strconv.Itoa(r.Status), r.ErrorClass,
		strconv.Itoa(r.Attempts), f(r.RetryAfterMs), strconv.FormatBool(r.OK), strconv.FormatBool(r.Warmup),
		f(r.SlotMs()), strconv.Itoa(r.RateLimitedAnswers()),
		strconv.FormatFloat(r.RateRPS, 'f', -1, 64), strconv.FormatBool(r.Refine),
		r.ServedModel, r.Conn, f(r.ConnWaitMs), f(r.DNSMs), f(r.ConnectMs), f(r.TLSMs), f(r.TTFBMs),
		strconv.Itoa(r.CachedTokens), strconv.Itoa(r.PrefixTokens), strconv.Itoa(r.Task), strconv.Itoa(r.Call),
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

// IsProbeCSVHeader reports whether a header row is CSVHeader, or the
// layout of older files.
func IsProbeCSVHeader(header []string) bool {
	for _, h := range [][]string{CSVHeader, csvHeaderV3, csvHeaderV2, csvHeaderV1} {
		if slices.Equal(header, h) {
			return true
		}
	}
	return false
}

// ProbeHeaderDiff says how a header row differs from CSVHeader: the
// columns it lacks, those the probe does not write, or that its columns
// are in another order.
func ProbeHeaderDiff(header []string) string {
	var missing, extra []string
	for _, h := range CSVHeader {
		if !slices.Contains(header, h) {
			missing = append(missing, h)
		}
	}
	for _, h := range header {
		if !slices.Contains(CSVHeader, h) {
			extra = append(extra, h)
		}
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "it has no column "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		parts = append(parts, "it has column "+strings.Join(extra, ", ")+", which the probe does not write")
	}
	if len(parts) == 0 {
		return "its columns are in another order than the probe writes them"
	}
	return strings.Join(parts, "; ")
}

// ReadCSV reads a requests.csv written by WriteCSV, in the current layout
// or an older one: without the prompt cache and conversation columns,
// without the served model and connection columns too, or without the
// retry columns too.
func ReadCSV(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read csv header: %w", err)
	}
	if !IsProbeCSVHeader(header) {
		return nil, fmt.Errorf("not a probe requests.csv: %s", ProbeHeaderDiff(header))
	}
	cr.FieldsPerRecord = len(header)
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
	if len(row) >= len(csvHeaderV2) {
		r.E2EWithRetriesMs, r.RateRPS, r.Refine = f(15), f(17), b(18)
		if n := i(16); len(errs) == 0 && n != r.RateLimitedAnswers() {
			errs = append(errs, fmt.Errorf("n429: %d, but attempts and error say %d", n, r.RateLimitedAnswers()))
		}
	}
	if len(row) >= len(csvHeaderV3) {
		r.ServedModel, r.Conn = row[19], row[20]
		r.ConnWaitMs, r.DNSMs, r.ConnectMs, r.TLSMs, r.TTFBMs = f(21), f(22), f(23), f(24), f(25)
		if r.Conn != "" && r.Conn != ConnNew && r.Conn != ConnReused {
			errs = append(errs, fmt.Errorf("conn: %q is neither %q nor %q", r.Conn, ConnNew, ConnReused))
		}
	}
	if len(row) == len(CSVHeader) {
		r.CachedTokens, r.PrefixTokens, r.Task, r.Call = i(26), i(27), i(28), i(29)
		for _, c := range []struct {
			col int
			v   int
		}{{26, r.CachedTokens}, {27, r.PrefixTokens}, {28, r.Task}, {29, r.Call}} {
			if c.v < 0 {
				errs = append(errs, fmt.Errorf("%s: %d is negative", CSVHeader[c.col], c.v))
			}
		}
	}
	return r, errors.Join(errs...)
}
