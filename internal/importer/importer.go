// Package importer reads the result files of the LLM benchmarking tools that
// teams already run (vLLM bench serve, GuideLLM, NVIDIA AIPerf and
// GenAI-Perf, llmperf) and ramp CSVs (the probe's requests.csv and the
// workshop layout step, idx, ok, code, ms, wall_s). It recognises the format
// by content, converts units to milliseconds, maps each tool's metric
// definitions onto DESIGN §2 (TTFT, TPOT, E2E, goodput), and returns the
// step table, the per-request rows when the file has them, the knee
// analysis and the scenario latency block, so that a team can plan from the
// measurements it already has instead of probing again. Every mapping and
// estimate made on the way is written into the result's notes.
package importer

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/scenario"
)

// File is one input file: its name (used for messages and to pair files of
// one run) and its content.
type File struct {
	Name string
	Data []byte
}

// Options are the judgement settings of the analysis and, optionally, a
// format that skips detection.
type Options struct {
	analysis.Options
	Format string // a format id from Formats, or "" / "auto" to detect by content
}

// Source describes one imported file.
type Source struct {
	Name    string `json:"name"`
	Format  string `json:"format"`
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"` // the tool's or the file layout's version, when recorded
	Model   string `json:"model,omitempty"`
	Date    string `json:"date,omitempty"` // when the run happened, as recorded
}

// Imported is the result of an import: the measurements in the planner's
// own terms and their analysis.
type Imported struct {
	// Format is the detected format id, or several joined by "+" when the
	// files of one import differ (a summary and its per-request file).
	Format  string   `json:"format"`
	Sources []Source `json:"sources"`
	// Steps are in ascending concurrency, then rate; JSON carries them as
	// analysis.steps.
	Steps []analysis.Step `json:"-"`
	// Records are the per-request rows, when the files have them; each
	// row's Step is the concurrency of its step (estimated for open loops).
	Records []analysis.Record `json:"records,omitempty"`
	// Analysis is the knee, collapse point, quota_limited and USL fit over
	// Steps (which come from the rows when the rows cover the whole run).
	Analysis analysis.Result `json:"analysis"`
	// Latency is the scenario latency block: the curve and the knee, the
	// knee alone for a ramp without TTFT, nil when there is neither.
	Latency *scenario.Latency `json:"latency,omitempty"`
	// Notes name every mapping and estimate made while importing.
	Notes []string `json:"notes,omitempty"`
}

// ErrUnknownFormat is returned for content that matches none of the formats.
var ErrUnknownFormat = errors.New("not a result file of a supported tool")

// FormatError is returned for a file that looks like a known format but
// cannot be read as one: truncated, corrupt, or missing a required field.
type FormatError struct {
	Format string // the format id it looked like
	Err    error
}

// Error reads "looks like <format> but <what is wrong>".
func (e *FormatError) Error() string {
	return "looks like " + describe(e.Format) + " but " + e.Err.Error()
}

// Unwrap returns the underlying problem.
func (e *FormatError) Unwrap() error { return e.Err }

// Import reads one file.
func Import(name string, data []byte, opts Options) (*Imported, error) {
	return ImportMany([]File{{Name: name, Data: data}}, opts)
}

// ImportMany reads several files of one ramp (for example one vLLM result
// per concurrency, or an AIPerf summary with its per-request records) and
// merges them into one step table sorted by concurrency. All files must
// come from the same tool; two files measuring the same step are refused.
func ImportMany(files []File, opts Options) (*Imported, error) {
	if len(files) == 0 {
		return nil, errors.New("no files to import")
	}
	parts := make([]*part, 0, len(files))
	for _, f := range files {
		p, err := parseFile(f, opts.Format)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		parts = append(parts, p)
	}
	if err := sameTool(parts); err != nil {
		return nil, err
	}
	var notes []string
	parts, notes = pairParts(parts, notes)
	return assemble(parts, opts.Options, notes)
}

// part is what one file yields.
type part struct {
	source Source
	runs   []*run
	notes  []string // mappings that hold for the whole file
	// summaryNotes hold only while the step comes from the summary, not
	// from per-request rows paired with it.
	summaryNotes []string
	// A companion holds per-request rows whose concurrency and wall time are
	// in a summary file of the same run, named by pairKey.
	companion bool
	pairKey   string
	// aloneNotes hold only when a companion found no summary to pair with.
	aloneNotes []string
	extra      []Source // files merged into this one: its companion, or the same run in another layout
}

func sameTool(parts []*part) error {
	tool := parts[0].source.Tool
	for _, p := range parts[1:] {
		if p.source.Tool != tool {
			return fmt.Errorf("%s comes from %s but %s from %s: import the files of one tool at a time",
				parts[0].source.Name, tool, p.source.Name, p.source.Tool)
		}
	}
	return nil
}

// pairParts attaches companions (per-request files) to the summary of the
// same run, the one with the same pair key; a companion without one stands
// alone. Of two summaries of the same run in different layouts, the fuller
// one is kept.
func pairParts(parts []*part, notes []string) ([]*part, []string) {
	var summaries, companions []*part
	for _, p := range parts {
		if p.companion {
			companions = append(companions, p)
		} else {
			summaries = append(summaries, p)
		}
	}
	summaries, notes = dropDuplicateSummaries(summaries, notes)
	out := slices.Clone(summaries)
	taken := map[int]bool{}
	for _, c := range companions {
		target := -1
		for i, s := range summaries {
			if !taken[i] && s.pairKey != "" && s.pairKey == c.pairKey && len(s.runs) == 1 {
				target = i
				break
			}
		}
		if target < 0 {
			out = append(out, c)
			continue
		}
		taken[target] = true
		s := summaries[target]
		sr, cr := s.runs[0], c.runs[0]
		sr.records, sr.recordsComplete, sr.recordsTimed = cr.records, cr.recordsComplete, cr.recordsTimed
		s.notes = append(s.notes, c.notes...)
		s.notes = append(s.notes, fmt.Sprintf("%s supplies the per-request rows of %s", c.source.Name, s.source.Name))
		s.extra = append(s.extra, c.source)
	}
	return out, notes
}

// dropDuplicateSummaries keeps one summary per run when the same run was
// passed in two layouts (AIPerf writes a JSON and a CSV summary side by side).
func dropDuplicateSummaries(summaries []*part, notes []string) ([]*part, []string) {
	var out []*part
	for _, s := range summaries {
		dup := -1
		for i, o := range out {
			if s.pairKey != "" && o.pairKey == s.pairKey && o.source.Format != s.source.Format {
				dup = i
			}
		}
		if dup < 0 {
			out = append(out, s)
			continue
		}
		keep, drop := out[dup], s
		if formatRank(s.source.Format) < formatRank(keep.source.Format) {
			keep, drop = s, keep
			out[dup] = s
		}
		notes = append(notes, fmt.Sprintf("%s and %s summarise the same run: %s is used", keep.source.Name, drop.source.Name, keep.source.Name))
		keep.extra = append(keep.extra, drop.source)
	}
	return out, notes
}

// assemble finishes every run, merges the steps and analyses them.
func assemble(parts []*part, opts analysis.Options, notes []string) (*Imported, error) {
	imp := &Imported{}
	total := 0
	for _, p := range parts {
		total += len(p.runs)
	}
	var formats []string
	type placed struct {
		step analysis.Step
		from string
	}
	var all []placed
	for _, p := range parts {
		for _, src := range append([]Source{p.source}, p.extra...) {
			imp.Sources = append(imp.Sources, src)
			if !slices.Contains(formats, src.Format) {
				formats = append(formats, src.Format)
			}
		}
		notes = append(notes, p.notes...)
		if len(p.runs) != 1 || !p.runs[0].recordsComplete {
			notes = append(notes, p.summaryNotes...)
		}
		if p.companion {
			notes = append(notes, p.aloneNotes...)
		}
		for _, r := range p.runs {
			st, recs, rNotes, err := r.finish(opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.label, &FormatError{Format: p.source.Format, Err: err})
			}
			for _, n := range rNotes {
				if total > 1 {
					n = r.label + ": " + n
				}
				notes = append(notes, n)
			}
			all = append(all, placed{st, r.label})
			imp.Records = append(imp.Records, recs...)
		}
	}
	type load struct {
		c    int
		rate float64
	}
	measured := map[load]string{}
	for _, a := range all {
		if a.step.ConcurrencyEstimated {
			continue
		}
		k := load{a.step.Concurrency, a.step.RateRPS}
		if first, dup := measured[k]; dup {
			return nil, fmt.Errorf("%s and %s both measure concurrency %d: pass one run per step", first, a.from, k.c)
		}
		measured[k] = a.from
	}
	slices.SortStableFunc(all, func(a, b placed) int {
		return cmp.Or(cmp.Compare(a.step.Concurrency, b.step.Concurrency), cmp.Compare(a.step.RateRPS, b.step.RateRPS))
	})
	for _, a := range all {
		imp.Steps = append(imp.Steps, a.step)
	}
	imp.Format = strings.Join(formats, "+")
	imp.Analysis = analysis.Analyze(imp.Steps, opts)
	imp.Steps = imp.Analysis.Steps
	lat, lNotes := latencyBlock(imp.Analysis)
	imp.Latency = lat
	imp.Notes = dedupe(append(notes, lNotes...))
	return imp, nil
}

// formatRank orders layouts of the same run by how much they hold.
func formatRank(format string) int {
	switch format {
	case FormatAIPerfJSON, FormatGenAIPerfJSON:
		return 0
	}
	return 1
}

func dedupe(notes []string) []string {
	var out []string
	for _, n := range notes {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// baseName is a file's name without its directory, for labels.
func baseName(name string) string { return filepath.Base(name) }
