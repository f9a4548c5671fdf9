package importer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner/internal/measure"
)

// Format ids, stable across releases: they appear in output and in the
// --format flag.
const (
	FormatVLLM             = "vllm-bench-serve"
	FormatVLLMSweepCSV     = "vllm-sweep-csv"
	FormatGuideLLM         = "guidellm-benchmarks"
	FormatGuideLLMCSV      = "guidellm-csv"
	FormatAIPerfJSON       = "aiperf-json"
	FormatAIPerfJSONL      = "aiperf-jsonl"
	FormatAIPerfCSV        = "aiperf-csv"
	FormatAIPerfSweep      = "aiperf-sweep-json"
	FormatGenAIPerfJSON    = "genai-perf-json"
	FormatGenAIPerfCSV     = "genai-perf-csv"
	FormatLLMPerfSummary   = "llmperf-summary"
	FormatLLMPerfResponses = "llmperf-responses"
	FormatProbeCSV         = "planner-requests-csv"
	FormatWorkshopCSV      = "workshop-ramp-csv"
)

// format reads one file layout. A JSON format has looks and parseJSON; a
// CSV format has looksCSV and parseCSV. looks and looksCSV decide by content
// alone; markers name the format of a JSON file too truncated to decode.
type format struct {
	id, what  string
	looks     func(vals []any) bool
	parseJSON func(name string, vals []any) (*part, error)
	looksCSV  func(header []string) bool
	parseCSV  func(name string, data []byte) (*part, error)
	markers   [][]string // any one group of byte strings all present marks a truncated file
}

// formats lists every format in the order detection tries them: the most
// specific content checks first.
var formats = []format{
	{id: FormatGuideLLM, what: "a GuideLLM benchmarks.json", looks: looksGuideLLM, parseJSON: parseGuideLLM,
		markers: [][]string{{`"benchmarks"`, `"guidellm`}, {`"benchmarks"`, `"generative_benchmark"`}}},
	{id: FormatAIPerfSweep, what: "an AIPerf profile_export_aiperf_sweep.json", looks: looksAIPerfSweep, parseJSON: parseAIPerfSweep,
		markers: [][]string{{`"aggregation_type"`, `"per_combination_metrics"`}}},
	{id: FormatAIPerfJSONL, what: "an AIPerf profile_export.jsonl", looks: looksAIPerfJSONL, parseJSON: parseAIPerfJSONL,
		markers: [][]string{{`{"metadata"`, `"metrics"`, `"timestamp_ns"`}}},
	{id: FormatAIPerfJSON, what: "an AIPerf profile_export_aiperf.json", looks: looksAIPerfJSON, parseJSON: parseAIPerfJSON,
		markers: [][]string{{`"aiperf_version"`}, {`"records"`, `"tag"`, `"unit"`}, {`"benchmark_duration"`, `"error_request_count"`}}},
	{id: FormatGenAIPerfJSON, what: "a GenAI-Perf profile_export_genai_perf.json", looks: looksGenAIPerfJSON, parseJSON: parseGenAIPerfJSON,
		markers: [][]string{{`"time_to_first_token"`, `"inter_token_latency"`}}},
	{id: FormatLLMPerfSummary, what: "an llmperf summary", looks: looksLLMPerfSummary, parseJSON: parseLLMPerfSummary,
		markers: [][]string{{`"results_ttft_s_`}, {`"num_concurrent_requests"`}}},
	{id: FormatLLMPerfResponses, what: "an llmperf individual_responses file", looks: looksLLMPerfResponses, parseJSON: parseLLMPerfResponses,
		markers: [][]string{{`"end_to_end_latency_s"`, `"ttft_s"`}}},
	{id: FormatVLLM, what: "a vLLM bench serve result", looks: looksVLLM, parseJSON: parseVLLM,
		markers: [][]string{{`"mean_ttft_ms"`}, {`"median_ttft_ms"`}, {`"num_prompts"`, `"request_throughput"`}, {`"burstiness"`}}},
	{id: FormatProbeCSV, what: "a planner requests.csv", looksCSV: looksProbeCSV, parseCSV: parseProbeCSV},
	{id: FormatWorkshopCSV, what: "a workshop ramp CSV (step, idx, ok, code, ms, wall_s)", looksCSV: looksWorkshopCSV, parseCSV: parseWorkshopCSV},
	{id: FormatVLLMSweepCSV, what: "a vLLM bench sweep serve summary.csv", looksCSV: looksVLLMSweepCSV, parseCSV: parseVLLMSweepCSV},
	{id: FormatGuideLLMCSV, what: "a GuideLLM benchmarks.csv", looksCSV: looksGuideLLMCSV, parseCSV: parseGuideLLMCSV},
	{id: FormatAIPerfCSV, what: "an AIPerf profile_export_aiperf.csv", looksCSV: looksAIPerfCSV, parseCSV: parseAIPerfCSV},
	{id: FormatGenAIPerfCSV, what: "a GenAI-Perf profile_export_genai_perf.csv", looksCSV: looksGenAIPerfCSV, parseCSV: parseGenAIPerfCSV},
}

// Formats returns every format id, for help texts and flag checks.
func Formats() []string {
	ids := make([]string, len(formats))
	for i, f := range formats {
		ids[i] = f.id
	}
	return ids
}

// KnownFormat reports whether id is a format id (or "auto" or "").
func KnownFormat(id string) bool {
	if id == "" || id == "auto" {
		return true
	}
	_, ok := lookup(id)
	return ok
}

func lookup(id string) (format, bool) {
	for _, f := range formats {
		if f.id == id {
			return f, true
		}
	}
	return format{}, false
}

// describe names a format for messages ("a vLLM bench serve result").
func describe(id string) string {
	if f, ok := lookup(id); ok {
		return f.what
	}
	return id
}

// maxMarkerScan bounds how much of a file the truncation markers search.
const maxMarkerScan = 1 << 20

// parseFile detects the file's format (or uses the forced one) and parses it.
func parseFile(f File, forced string) (*part, error) {
	data := bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("the file is empty")
	}
	if kind := archive(data); kind != "" {
		return nil, fmt.Errorf("%w: the file is %s: decompress it first, and import what it holds", ErrUnknownFormat, kind)
	}
	if forced != "" && forced != "auto" {
		fm, ok := lookup(forced)
		if !ok {
			return nil, fmt.Errorf("unknown format %q (known: %s)", forced, strings.Join(Formats(), ", "))
		}
		return parseAs(fm, f.Name, data)
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		return detectJSON(f.Name, data)
	}
	if json.Valid(trimmed) {
		// null, a string or a number: JSON, but no tool's result, and not
		// a CSV header either.
		return nil, fmt.Errorf("%w: the file is the JSON value %.40s, where a result file holds a JSON object or array, or a CSV table", ErrUnknownFormat, trimmed)
	}
	p, err := detectCSV(f.Name, data)
	if errors.Is(err, ErrUnknownFormat) {
		if js, ok := yamlAsJSON(data); ok {
			return detectJSON(f.Name, js)
		}
	}
	return p, err
}

// archive names the compressed or archive format data begins with by its
// magic bytes, "" for none: such a file holds a result file, and reading
// it as text would only echo its bytes.
func archive(data []byte) string {
	for _, m := range []struct{ magic, kind string }{
		{"\x1f\x8b", "gzip-compressed"},
		{"PK\x03\x04", "a zip archive"},
		{"\xfd7zXZ\x00", "xz-compressed"},
		{"\x28\xb5\x2f\xfd", "zstd-compressed"},
	} {
		if bytes.HasPrefix(data, []byte(m.magic)) {
			return m.kind
		}
	}
	if len(data) > 3 && bytes.HasPrefix(data, []byte("BZh")) && data[3] >= '1' && data[3] <= '9' {
		return "bzip2-compressed"
	}
	return ""
}

// yamlAsJSON converts a YAML mapping (GuideLLM's benchmarks.yaml) into
// JSON, or reports false for anything else.
func yamlAsJSON(data []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] == '{' || trimmed[0] == '[' {
		return nil, false
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(js), []byte("{")) {
		return nil, false
	}
	return js, true
}

// parseAs reads data as the format asked for. Content that the format's
// own check does not recognise but another format's does is refused with
// both named, rather than with a key of the asked format found missing
// (an AIPerf summary asked of a vLLM result "has no request_throughput").
func parseAs(fm format, name string, data []byte) (*part, error) {
	var p *part
	var err error
	looked := true
	if fm.parseJSON != nil {
		js := data
		if y, ok := yamlAsJSON(data); ok {
			js = y
		}
		var vals []any
		vals, err = decodeJSONValues(js)
		looked = fm.looks(vals)
		if !looked {
			other := detectedAs(data)
			if other != "" && other != fm.id {
				return nil, askedOtherFormat(fm, other)
			}
			looked = other == fm.id
		}
		if err == nil {
			p, err = fm.parseJSON(name, vals)
		}
	} else {
		header, herr := csv.NewReader(bytes.NewReader(data)).Read()
		looked = herr == nil && fm.looksCSV(header)
		if !looked {
			other := detectedAs(data)
			if other != "" && other != fm.id {
				return nil, askedOtherFormat(fm, other)
			}
			looked = other == fm.id
		}
		p, err = fm.parseCSV(name, data)
	}
	if err != nil {
		return nil, &FormatError{Format: fm.id, Err: err, Asked: !looked}
	}
	return finishPart(p, name, fm.id), nil
}

// askedOtherFormat is the error for a file asked to be read as fm that
// looks like the format other.
func askedOtherFormat(fm format, other string) error {
	return &FormatError{Format: other, Err: fmt.Errorf("was asked to be read as %s (format %s): leave the format out to have it detected, or ask for %s", fm.what, fm.id, other)}
}

// detectedAs names the format that detection finds data to look like, by
// each format's check of its content alone (nothing is parsed), or "".
func detectedAs(data []byte) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return ""
	}
	js := data
	if trimmed[0] != '{' && trimmed[0] != '[' {
		if header, err := csv.NewReader(bytes.NewReader(data)).Read(); err == nil {
			for _, fm := range formats {
				if fm.looksCSV != nil && fm.looksCSV(header) {
					return fm.id
				}
			}
		}
		y, ok := yamlAsJSON(data)
		if !ok {
			return ""
		}
		js = y
	}
	vals, decErr := decodeJSONValues(js)
	for _, fm := range formats {
		if fm.looks != nil && len(vals) > 0 && fm.looks(vals) {
			return fm.id
		}
	}
	if decErr != nil {
		head := js[:min(len(js), maxMarkerScan)]
		for _, fm := range formats {
			for _, group := range fm.markers {
				if containsAll(head, group) {
					return fm.id
				}
			}
		}
	}
	return ""
}

func detectJSON(name string, data []byte) (*part, error) {
	vals, decErr := decodeJSONValues(data)
	if decErr == nil {
		for _, fm := range formats {
			if fm.looks != nil && fm.looks(vals) {
				p, err := fm.parseJSON(name, vals)
				if err != nil {
					return nil, &FormatError{Format: fm.id, Err: err}
				}
				return finishPart(p, name, fm.id), nil
			}
		}
		return nil, fmt.Errorf("%w: the JSON matches none of %s", ErrUnknownFormat, strings.Join(jsonFormats(), ", "))
	}
	// Unreadable JSON: name the format from what was decoded, or from
	// marker keys in the raw bytes.
	for _, fm := range formats {
		if fm.looks != nil && len(vals) > 0 && fm.looks(vals) {
			return nil, &FormatError{Format: fm.id, Err: decErr}
		}
	}
	head := data[:min(len(data), maxMarkerScan)]
	for _, fm := range formats {
		for _, group := range fm.markers {
			if containsAll(head, group) {
				return nil, &FormatError{Format: fm.id, Err: decErr}
			}
		}
	}
	return nil, fmt.Errorf("%w: %v", ErrUnknownFormat, decErr)
}

func containsAll(data []byte, subs []string) bool {
	for _, s := range subs {
		if !bytes.Contains(data, []byte(s)) {
			return false
		}
	}
	return true
}

func jsonFormats() []string {
	var ids []string
	for _, f := range formats {
		if f.parseJSON != nil {
			ids = append(ids, f.id)
		}
	}
	return ids
}

func detectCSV(name string, data []byte) (*part, error) {
	header, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err != nil {
		return nil, fmt.Errorf("%w: neither JSON nor a readable CSV header: %v", ErrUnknownFormat, err)
	}
	for _, fm := range formats {
		if fm.looksCSV == nil || !fm.looksCSV(header) {
			continue
		}
		p, err := fm.parseCSV(name, data)
		if err != nil {
			return nil, &FormatError{Format: fm.id, Err: err}
		}
		return finishPart(p, name, fm.id), nil
	}
	if err := nearMissCSV(header); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: the CSV header %q matches none of the known layouts", ErrUnknownFormat, strings.Join(header, ","))
}

// nearMissCSV names the ramp CSV layout that a header matching none comes
// close to, with what it lacks: most of the workshop layout's columns, or
// the first columns of a probe's requests.csv (step, idx, start_s), as a
// file whose column was renamed or dropped by hand has.
func nearMissCSV(header []string) error {
	ws := workshopIndex(header)
	_, step := ws["step"]
	_, ms := ws["ms"]
	if step && ms && len(ws) >= len(workshopColumns)-2 {
		var missing []string
		for _, c := range workshopColumns {
			if _, ok := ws[c]; !ok {
				missing = append(missing, strconv.Quote(c))
			}
		}
		return &FormatError{Format: FormatWorkshopCSV, Err: fmt.Errorf("has no %s column", strings.Join(missing, " or "))}
	}
	if len(header) >= 3 && slices.Equal(header[:3], measure.CSVHeader[:3]) {
		return &FormatError{Format: FormatProbeCSV, Err: errors.New(measure.ProbeHeaderDiff(header))}
	}
	return nil
}

// readCSV reads every row; rows may differ in length (the tools' metric
// tables hold several sections).
func readCSV(data []byte) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	var rows [][]string
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
}

// finishPart fills what every part shares: its source's name and format,
// and a label per run.
func finishPart(p *part, name, id string) *part {
	p.source.Name, p.source.Format = name, id
	for i, r := range p.runs {
		if r.label == "" {
			r.label = baseName(name)
			if len(p.runs) > 1 {
				r.label = fmt.Sprintf("%s #%d", baseName(name), i+1)
			}
		}
	}
	return p
}
