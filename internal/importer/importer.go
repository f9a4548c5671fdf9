// Package importer reads the result files of the LLM benchmarking tools that
// teams already run (vLLM bench serve, GuideLLM, NVIDIA AIPerf and
// GenAI-Perf, llmperf) and ramp CSVs (the probe's requests.csv and the
// workshop layout step, idx, ok, code, ms, wall_s). It recognises the format
// by content, converts units to milliseconds, maps each tool's metric
// definitions onto the planner's metrics (docs/concepts.md, "Metrics": TTFT, TPOT, E2E, goodput), and returns the
// step table, the per-request rows when the file has them, the knee
// analysis and the scenario latency block, so that a team can plan from the
// measurements it already has instead of probing again. Every mapping and
// estimate made on the way is written into the result's notes.
package importer

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plannerdev/planner/internal/analysis"
	"github.com/plannerdev/planner/internal/measure"
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
	// AllowMixed imports files that do not describe one deployment (or a
	// summary with records that do not match it) as one ramp anyway, with
	// a warning in the notes, instead of refusing them.
	AllowMixed bool
}

// Source describes one imported file.
type Source struct {
	Name    string `json:"name"`
	Format  string `json:"format"`
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"` // the tool's or the file layout's version, when recorded
	Model   string `json:"model,omitempty"`
	Date    string `json:"date,omitempty"` // when the run happened, as recorded
	// Endpoint is the URL or host the run measured, when the file says.
	Endpoint string `json:"endpoint,omitempty"`
	// Settings are the tool's settings besides the load level (token
	// lengths asked for, backend, streaming, ...), as the file records
	// them: files of one ramp share them.
	Settings map[string]string `json:"settings,omitempty"`
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
	Steps []measure.Step `json:"-"`
	// Records are the per-request rows, when the files have them; each
	// row's Step is the concurrency of its step (estimated for open loops).
	Records []measure.Record `json:"records,omitempty"`
	// Analysis is the knee, collapse point, quota_limited and USL fit over
	// Steps (which come from the rows when the rows cover the whole run).
	Analysis measure.Result `json:"analysis"`
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
	Format string // the format id it looked like, or was asked to be read as
	Err    error
	// Asked is set when the file was read as Format because that format
	// was asked for, its content not recognised as that format.
	Asked bool
}

// Error reads "looks like <format> but <what is wrong>", or "read as
// <format>, as asked, but <what is wrong>" for a format asked for that the
// content did not look like.
func (e *FormatError) Error() string {
	if e.Asked {
		return "read as " + describe(e.Format) + ", as asked, but " + e.Err.Error()
	}
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
// merges them into one step table sorted by concurrency (docs/import.md,
// "Combining files"). All files must come from the same tool and describe
// one deployment: the same model, endpoint and tool settings where the
// files record them, differing only in the load. A summary and its
// per-request records are paired only when their counts, times and model
// agree. Two runs at the same load are refused, whatever was estimated.
// With AllowMixed, files that differ are imported anyway, with a warning.
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
	shown := fileNamer(files)
	for _, p := range parts {
		shown.relabel(p)
	}
	if err := sameTool(parts); err != nil {
		return nil, err
	}
	var notes []string
	parts, notes, err := pairParts(parts, notes, opts.AllowMixed)
	if err != nil {
		return nil, err
	}
	if diffs := deploymentDiffs(parts, shown); len(diffs) > 0 {
		if !opts.AllowMixed {
			return nil, fmt.Errorf("the files do not describe one deployment (%s): import the runs of one deployment at a time, or pass --allow-mixed to combine them anyway", strings.Join(diffs, "; "))
		}
		notes = append(notes, fmt.Sprintf("warning: files of different deployments combined into one ramp at your request (--allow-mixed): %s; the knee and the curve mix them", strings.Join(diffs, "; ")))
	}
	return assemble(parts, opts.Options, notes)
}

// deploymentDiffs names how the parts differ besides the load: model,
// endpoint and each setting that two files both record with different
// values.
func deploymentDiffs(parts []*part, shown namer) []string {
	var diffs []string
	type seen struct{ value, file string }
	first := map[string]seen{}
	note := func(field, value, file string) {
		if value == "" {
			return
		}
		f, ok := first[field]
		switch {
		case !ok:
			first[field] = seen{value, file}
		case f.value != value:
			d := fmt.Sprintf("%s is %q in %s but %q in %s", field, f.value, shown.name(f.file), value, shown.name(file))
			if !slices.Contains(diffs, d) {
				diffs = append(diffs, d)
			}
		}
	}
	for _, p := range parts {
		for _, src := range append([]Source{p.source}, p.extra...) {
			note("model", src.Model, src.Name)
			note("endpoint", src.Endpoint, src.Name)
			for _, k := range slices.Sorted(maps.Keys(src.Settings)) {
				note(k, src.Settings[k], src.Name)
			}
		}
	}
	return diffs
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
// same run: the one with the same pair key, whose counts, times and model
// agree with the rows. A companion and a summary with the same key that
// disagree are refused (with allowMixed, both stand alone, with a
// warning); a companion without a summary stands alone. Of two summaries
// of the same run in different layouts, the fuller one is kept.
func pairParts(parts []*part, notes []string, allowMixed bool) ([]*part, []string, error) {
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
			if taken[i] || s.pairKey == "" || s.pairKey != c.pairKey || len(s.runs) != 1 {
				continue
			}
			if why := disagreement(s, c); why != "" {
				msg := fmt.Sprintf("%s and %s sit together but are not the same run: %s", c.source.Name, s.source.Name, why)
				if !allowMixed {
					return nil, nil, fmt.Errorf("%s; pass the files of one run (or --allow-mixed to import them as separate steps)", msg)
				}
				notes = append(notes, "warning: "+msg+"; imported as separate steps (--allow-mixed)")
				continue
			}
			target = i
			break
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
		s.notes = append(s.notes, fmt.Sprintf("%s supplies the per-request rows of %s (their counts and times agree)", c.source.Name, s.source.Name))
		s.extra = append(s.extra, c.source)
	}
	return out, notes, nil
}

// disagreement says why the rows of companion c cannot be the requests
// that summary s summarises, or "": a different model, a different number
// of requests, or a span of time that is not the run's duration (within
// 10 % and a second, as tools time their runs slightly differently).
func disagreement(s, c *part) string {
	if s.source.Model != "" && c.source.Model != "" && s.source.Model != c.source.Model {
		return fmt.Sprintf("the summary's model is %q, the rows' %q", s.source.Model, c.source.Model)
	}
	sr, cr := s.runs[0], c.runs[0]
	measured := 0
	for _, r := range cr.records {
		if !r.Warmup {
			measured++
		}
	}
	if sr.countsKnown && sr.requests != measured {
		return fmt.Sprintf("the summary counts %d requests (%d ok, %d failed), the rows %d", sr.requests, sr.ok, sr.requests-sr.ok, measured)
	}
	if sr.wallS > 0 && cr.recordsTimed {
		if span := cr.recordsWall(); span > 0 && math.Abs(span-sr.wallS) > 0.1*sr.wallS+1 {
			return fmt.Sprintf("the summary's run lasted %.4g s, the rows span %.4g s", sr.wallS, span)
		}
	}
	return ""
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
		step measure.Step
		from string
		load string
	}
	var all []placed
	rows := 0
	for _, p := range parts {
		for _, r := range p.runs {
			rows += len(r.records)
		}
	}
	switch {
	case rows > maxRows && len(parts) == 1:
		return nil, fmt.Errorf("%s: %w", parts[0].source.Name, &FormatError{Format: parts[0].source.Format, Err: errTooManyRows()})
	case rows > maxRows:
		return nil, fmt.Errorf("the files hold %d request rows together, more than %d, the most one import reads: import fewer files at a time", rows, maxRows)
	}
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
			from := r.label
			if !strings.Contains(from, baseName(p.source.Name)) {
				from += " of " + p.source.Name // a step of a ramp CSV: the label alone names no file
			}
			st, recs, rNotes, err := r.finish(opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", from, &FormatError{Format: p.source.Format, Err: err})
			}
			if err := r.judgesSLO(opts.SLO); err != nil {
				return nil, fmt.Errorf("%s: %w", p.source.Name, err)
			}
			for _, n := range rNotes {
				if total > 1 {
					n = r.label + ": " + n
				}
				notes = append(notes, n)
			}
			load := r.load()
			if r.concurrency == 0 && r.rateRPS == 0 {
				// An unknown load: two runs that measured exactly the same are
				// the same run twice.
				load = fmt.Sprintf("the same unknown load with the same figures (%d requests, %.6g req/s, TTFT p50 %.6g ms)", st.Requests, st.ThroughputRPS, st.TTFTP50Ms)
			}
			all = append(all, placed{st, from, load})
			if imp.Records == nil && total == 1 {
				imp.Records = recs // the one run's rows, not a copy of them
			} else {
				imp.Records = append(imp.Records, recs...)
			}
		}
	}
	measured := map[string]string{}
	for _, a := range all {
		if first, dup := measured[a.load]; dup {
			return nil, fmt.Errorf("%s and %s both measure %s: pass one run per step", first, a.from, a.load)
		}
		measured[a.load] = a.from
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

// namer names the files of one import in messages: by base name, or by
// the path as given where two files share a base name
// (run1/profile_export_aiperf.json and run2/profile_export_aiperf.json),
// so that a message tells them apart.
type namer map[string]map[string]bool // base name: the paths that have it

func fileNamer(files []File) namer {
	n := namer{}
	for _, f := range files {
		b := baseName(f.Name)
		if n[b] == nil {
			n[b] = map[string]bool{}
		}
		n[b][f.Name] = true
	}
	return n
}

func (n namer) name(path string) string {
	if len(n[baseName(path)]) > 1 {
		return path
	}
	return baseName(path)
}

// relabel names p's runs, and the notes that begin with a run's label, by
// the file's path where its base name is shared.
func (n namer) relabel(p *part) {
	base, shown := baseName(p.source.Name), n.name(p.source.Name)
	if shown == base {
		return
	}
	re := func(s string) string {
		if strings.HasPrefix(s, base) {
			return shown + s[len(base):]
		}
		return s
	}
	for _, r := range p.runs {
		r.label = re(r.label)
	}
	for _, notes := range [][]string{p.notes, p.summaryNotes, p.aloneNotes} {
		for i := range notes {
			notes[i] = re(notes[i])
		}
	}
}
