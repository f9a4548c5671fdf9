package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/plan"
)

// The charts are SVG documents made with gonum/plot. Each one is a single
// <svg> element with no external reference (no fonts, images or scripts to
// fetch), so that it can be served alone (a probe's plot.svg) or inlined in
// an HTML report. The root element carries, besides the drawing:
//   - a <title> naming the chart, for screen readers and tooltips;
//   - data-chart: the kind of chart (ceilings, throughput, latency);
//   - data-x-label: the label of the x axis;
//   - data-y-label: the label of each panel's y axis, separated by "; ".
//
// CheckHTML reads these to verify that every chart's axes are labelled.
// The same input always gives the same bytes.

// Chart kinds, the value of data-chart.
const (
	ChartCeilings   = "ceilings"
	ChartThroughput = "throughput"
	ChartLatency    = "latency"
)

// yLabelSep separates the y-axis labels of a chart's panels in data-y-label
// (semicolons, as readers of the attribute split it).
const yLabelSep = "; "

// Axis labels, with units.
const (
	labelConcurrency = "concurrency (requests in flight)"
	labelPool        = "largest pool (requests in flight)"
	labelConstraint  = "constraint"
	labelResponses   = "responses per second (req/s)"
	labelOutputTPS   = "output tokens per second (tokens/s)"
	labelTTFT        = "TTFT p95 (ms)"
	labelE2E         = "E2E p95 (ms)"
)

// The charts are laid out with Liberation Sans metrics; Arial has the
// same metrics, so a viewer without Liberation Sans draws them as intended.
const (
	sansFamily = "Liberation Sans"
	sansStack  = "'Liberation Sans',Arial,Helvetica,sans-serif"
)

var (
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

	colorBinding = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff} // red
	colorPrimary = color.RGBA{R: 0x1f, G: 0x5f, B: 0x9e, A: 0xff} // blue
	colorSecond  = color.RGBA{R: 0xe0, G: 0x7b, B: 0x00, A: 0xff} // orange
	colorTokens  = color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff} // green
	colorMarker  = color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff} // dark grey
	colorSLO     = color.RGBA{R: 0x8e, G: 0x24, B: 0xaa, A: 0xff} // purple
	colorMuted   = color.RGBA{R: 0x75, G: 0x75, B: 0x75, A: 0xff} // grey
	colorGrid    = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
)

// Chart geometry.
const (
	chartWidth   = 7 * vg.Inch
	legendWidth  = 1.7 * vg.Inch
	panelHeight  = 2.6 * vg.Inch
	titleHeight  = 0.35 * vg.Inch
	ceilingRow   = 0.38 * vg.Inch
	ceilingExtra = 1.1 * vg.Inch
)

// ErrNoData is returned when a chart has nothing to draw: a class without
// ceilings, a ramp without steps or without a successful response. A
// server maps it to "not found" rather than to a failure.
var ErrNoData = errors.New("nothing to chart")

// CeilingsSVG draws a class's ceilings as horizontal bars, one per
// constraint in the plan's order: the binding one in red and labelled
// "binds", the others in blue. An unbounded ceiling is written
// "unbounded" instead of a bar, and a ceiling far above the pool (beyond
// ten times it, such as the policy cap) is drawn to the edge and labelled
// "off scale", so that the ceilings that matter stay readable.
func CeilingsSVG(c plan.ClassPlan) ([]byte, error) {
	if len(c.Ceilings) == 0 {
		return nil, fmt.Errorf("ceilings chart of class %s: %w", c.Name, ErrNoData)
	}
	n := len(c.Ceilings)
	bars := &ceilingBars{}
	scaleCap := 10 * float64(max(c.Pool, 1))
	limit := 1.0
	names := make([]string, n)
	for i, ce := range c.Ceilings {
		b := ceilingBar{y: float64(n - 1 - i), binding: ce.Constraint == c.BindingConstraint}
		for _, tied := range c.TiedConstraints {
			b.tied = b.tied || tied == ce.Constraint
		}
		if ce.MaxPool != nil {
			v := float64(*ce.MaxPool)
			b.value = &v
			if v <= scaleCap {
				limit = math.Max(limit, v)
			}
		}
		bars.bars = append(bars.bars, b)
		names[n-1-i] = ce.Constraint
	}
	bars.axisMax = limit * 1.3
	pn := newPanel(labelPool, labelConstraint)
	pn.p.Add(bars)
	pn.p.NominalY(names...)
	pn.p.X.Min, pn.p.X.Max = 0, bars.axisMax
	pn.p.Y.Min, pn.p.Y.Max = -0.6, float64(n)-0.4
	pn.leg.Add("binding constraint", swatch{colorBinding})
	pn.leg.Add("other ceiling", swatch{colorPrimary})
	title := fmt.Sprintf("Ceilings on the pool of %s: pool %d, bound by %s", c.Name, c.Pool, c.BindingConstraint)
	return render(ChartCeilings, title, ceilingExtra+ceilingRow*vg.Length(n), pn)
}

// ThroughputSVG draws a ramp's goodput and throughput (top panel, req/s)
// and output tokens per second (bottom panel) against concurrency, with the
// knee marked by a vertical line in both panels, and the collapse point
// when there is one.
func ThroughputSVG(r measure.Result) ([]byte, error) {
	var good, thr, tps plotter.XYs
	for _, s := range r.Steps {
		if s.Concurrency <= 0 {
			continue
		}
		x := float64(s.Concurrency)
		good = appendFinite(good, x, s.GoodputRPS)
		thr = appendFinite(thr, x, s.ThroughputRPS)
		tps = appendFinite(tps, x, s.OutputTPS)
	}
	if len(good)+len(thr)+len(tps) == 0 {
		return nil, fmt.Errorf("throughput chart: %w: the ramp has no steps", ErrNoData)
	}
	top := newPanel(labelConcurrency, labelResponses)
	top.line("goodput", good, colorPrimary, nil)
	top.line("throughput", thr, colorSecond, []vg.Length{vg.Points(5), vg.Points(3)})
	bottom := newPanel(labelConcurrency, labelOutputTPS)
	bottom.line("output TPS", tps, colorTokens, nil)
	for _, pn := range []*panel{top, bottom} {
		pn.concurrencyAxis(r.Steps)
		pn.marks(r, true)
	}
	return render(ChartThroughput, "Goodput and output TPS by concurrency", 2*panelHeight+titleHeight, top, bottom)
}

// LatencySVG draws a ramp's TTFT p95 (top panel) and E2E p95 (bottom
// panel) against concurrency, over the steps that had successful
// responses, with the knee marked and each SLO drawn as a labelled
// horizontal line when it is positive.
func LatencySVG(r measure.Result, sloE2EMs, sloTTFTMs float64) ([]byte, error) {
	var ttft, e2e plotter.XYs
	for _, s := range r.Steps {
		if s.Concurrency <= 0 || (s.OK == 0 && !s.CountsUnknown) {
			continue
		}
		x := float64(s.Concurrency)
		if s.TTFTP95Ms > 0 {
			ttft = appendFinite(ttft, x, s.TTFTP95Ms)
		}
		if s.E2EP95Ms > 0 {
			e2e = appendFinite(e2e, x, s.E2EP95Ms)
		}
	}
	if len(e2e)+len(ttft) == 0 {
		return nil, fmt.Errorf("latency chart: %w: no step had successful responses", ErrNoData)
	}
	top := newPanel(labelConcurrency, labelTTFT)
	top.line("TTFT p95", ttft, colorPrimary, nil)
	top.slo("TTFT", sloTTFTMs)
	bottom := newPanel(labelConcurrency, labelE2E)
	bottom.line("E2E p95", e2e, colorSecond, nil)
	bottom.slo("E2E", sloE2EMs)
	for _, pn := range []*panel{top, bottom} {
		pn.concurrencyAxis(r.Steps)
		pn.marks(r, false)
	}
	return render(ChartLatency, "TTFT and E2E p95 by concurrency", 2*panelHeight+titleHeight, top, bottom)
}

func appendFinite(xys plotter.XYs, x, y float64) plotter.XYs {
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return xys
	}
	return append(xys, plotter.XY{X: x, Y: y})
}

// panel is one plot of a chart with its legend, which is drawn beside the
// plot rather than over the data.
type panel struct {
	p   *plot.Plot
	leg plot.Legend
}

// newPanel returns a panel with the report's fonts, labelled axes and a
// light grid.
func newPanel(xLabel, yLabel string) *panel {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10.5)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker, p.Y.Tick.Marker = numTicks{}, numTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = colorGrid, colorGrid
	p.Add(grid)
	leg := plot.NewLegend()
	leg.TextStyle.Font = font.From(sans, 9)
	leg.Top, leg.Left = true, true
	leg.XOffs = vg.Points(12)
	leg.Padding = vg.Points(3)
	return &panel{p: p, leg: leg}
}

// concurrencyAxis makes the x axis logarithmic, since concurrency ladders
// are mostly geometric (1, 2, 4, 8, ...), with a tick at every step that
// has room for its label.
func (pn *panel) concurrencyAxis(steps []measure.Step) {
	var cs []float64
	for _, s := range steps {
		if s.Concurrency > 0 {
			cs = append(cs, float64(s.Concurrency))
		}
	}
	slices.Sort(cs)
	cs = slices.Compact(cs)
	lo, hi := cs[0], cs[len(cs)-1]
	pn.p.X.Scale = plot.LogScale{}
	pn.p.X.Min, pn.p.X.Max = lo/1.15, hi*1.15
	// Labels closer than 1/24 of the axis would overlap; those steps get
	// an unlabelled tick.
	minGap := math.Log(pn.p.X.Max/pn.p.X.Min) / 24
	ticks := make(plot.ConstantTicks, 0, len(cs))
	last := math.Inf(-1)
	for _, c := range cs {
		t := plot.Tick{Value: c}
		if math.Log(c)-last >= minGap {
			t.Label, last = fmtNum(c), math.Log(c)
		}
		ticks = append(ticks, t)
	}
	pn.p.X.Tick.Marker = ticks
}

// numTicks is gonum's default tick placement with labels written like the
// rest of the report (thousands separators, no trailing zeros).
type numTicks struct{}

// Ticks implements plot.Ticker.
func (numTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmtNum(ts[i].Value)
		}
	}
	return ts
}

// line draws a series as a line with points, from a y of zero up, and adds
// it to the legend.
func (pn *panel) line(name string, xys plotter.XYs, c color.Color, dashes []vg.Length) {
	pn.p.Y.Min = 0
	if len(xys) == 0 {
		return
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return // unreachable: the values were filtered to finite numbers
	}
	line.Color, line.Width, line.Dashes = c, vg.Points(1.6), dashes
	points.Color, points.Shape, points.Radius = c, draw.CircleGlyph{}, vg.Points(2.4)
	pn.p.Add(line, points)
	pn.leg.Add(name, line, points)
}

// marks draws the knee ("knee ≥ 4" for a lower bound) and the collapse
// point of a ramp as vertical lines, labelled at the bottom of the plot
// when low is set (where rising throughput curves leave room) and at the
// top otherwise.
func (pn *panel) marks(r measure.Result, low bool) {
	if r.Knee != nil {
		label := "knee " + strconv.Itoa(*r.Knee)
		if r.KneeLowerBound {
			label = "knee ≥ " + strconv.Itoa(*r.Knee)
		}
		knee := &vLine{x: float64(*r.Knee), label: label, color: colorMarker, dashes: []vg.Length{vg.Points(6), vg.Points(3)}, low: low}
		pn.p.Add(knee)
		pn.leg.Add("knee", knee)
	}
	if r.Collapse != nil {
		collapse := &vLine{x: float64(*r.Collapse), label: "collapse " + strconv.Itoa(*r.Collapse), color: colorMuted, dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}, row: 1, low: low}
		pn.p.Add(collapse)
		pn.leg.Add("collapse", collapse)
	}
}

// slo draws an SLO as a labelled horizontal line, when it is set.
func (pn *panel) slo(name string, v float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return
	}
	line := &hLine{y: v, label: fmt.Sprintf("%s SLO %s ms", name, fmtNum(v))}
	pn.p.Add(line)
	pn.leg.Add(name+" SLO (p95)", line)
}

// render draws a title over panels stacked vertically, each with its
// legend on the right, and returns the SVG document.
func render(kind, title string, height vg.Length, panels ...*panel) ([]byte, error) {
	canvas := vgsvg.New(chartWidth, height)
	dc := draw.New(canvas)
	// The title is centred over the plots, in a smaller font when a long
	// class name would not fit.
	sty := textStyle(13, color.Black)
	for size := vg.Length(12); sty.Width(title) > chartWidth-vg.Points(8) && size >= 7; size-- {
		sty = textStyle(size, color.Black)
	}
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	x := max((dc.Min.X+dc.Max.X-legendWidth)/2, dc.Min.X+vg.Points(4)+sty.Width(title)/2)
	dc.FillText(sty, vg.Point{X: x, Y: dc.Max.Y - vg.Points(6)}, title)
	area := dc
	area.Max.X -= legendWidth
	area.Max.Y -= titleHeight
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		plots[i] = []*plot.Plot{pn.p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(14), PadBottom: vg.Points(4), PadLeft: vg.Points(4)}
	cells := plot.Align(plots, tiles, area)
	meta := chartMeta{kind: kind, title: title}
	for i, pn := range panels {
		pn.p.Draw(cells[i][0])
		data := pn.p.DataCanvas(cells[i][0])
		side := dc
		side.Min.X, side.Max.X = area.Max.X, dc.Max.X
		side.Min.Y, side.Max.Y = data.Min.Y, data.Max.Y
		pn.leg.Draw(side)
		meta.xLabel = pn.p.X.Label.Text
		meta.yLabels = append(meta.yLabels, pn.p.Y.Label.Text)
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("render %s chart: %w", kind, err)
	}
	return meta.annotate(buf.Bytes())
}

// chartMeta is what the root <svg> element says about a chart.
type chartMeta struct {
	kind, title, xLabel string
	yLabels             []string
}

// annotate replaces the XML prolog and comment of a gonum SVG document
// with a root element that carries the chart's title and axis labels, so
// that the document can be inlined in HTML as it is.
func (m chartMeta) annotate(doc []byte) ([]byte, error) {
	start := bytes.Index(doc, []byte("<svg"))
	if start < 0 {
		return nil, fmt.Errorf("render %s chart: no <svg> element in the output", m.kind)
	}
	end := bytes.IndexByte(doc[start:], '>')
	if end < 0 {
		return nil, fmt.Errorf("render %s chart: unterminated <svg> element", m.kind)
	}
	end += start
	var out bytes.Buffer
	out.Write(bytes.TrimRight(doc[start:end], "/"))
	fmt.Fprintf(&out, ` role="img" data-chart="%s" data-x-label="%s" data-y-label="%s">`,
		html.EscapeString(m.kind), html.EscapeString(m.xLabel), html.EscapeString(strings.Join(m.yLabels, yLabelSep)))
	fmt.Fprintf(&out, "\n<title>%s</title>", html.EscapeString(m.title))
	out.Write(bytes.ReplaceAll(doc[end+1:], []byte("font-family:"+sansFamily+";"), []byte("font-family:"+sansStack+";")))
	return out.Bytes(), nil
}

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{Color: c, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

// ceilingBars draws the bars of CeilingsSVG.
type ceilingBars struct {
	bars    []ceilingBar
	axisMax float64
}

// ceilingBar is one constraint's bar; value is nil when unbounded.
type ceilingBar struct {
	y             float64
	value         *float64
	binding, tied bool
}

// Plot implements plot.Plotter.
func (cb *ceilingBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	half := (trY(1) - trY(0)) * 0.3
	pad := vg.Points(4)
	for _, b := range cb.bars {
		y := trY(b.y)
		label := textStyle(9, color.Black)
		label.YAlign = draw.YCenter
		if b.value == nil {
			label.Color = colorMuted
			c.FillText(label, vg.Point{X: trX(0) + pad, Y: y}, "unbounded")
			continue
		}
		v := *b.value
		offScale := v > cb.axisMax
		end := trX(math.Min(v, cb.axisMax))
		fill := colorPrimary
		if b.binding {
			fill = colorBinding
		}
		c.FillPolygon(fill, []vg.Point{{X: trX(0), Y: y - half}, {X: end, Y: y - half}, {X: end, Y: y + half}, {X: trX(0), Y: y + half}})
		text := fmtNum(v)
		switch {
		case b.binding:
			text += " (binds)"
		case b.tied:
			text += " (ties)"
		}
		if offScale {
			label.Color, label.XAlign = color.White, draw.XRight
			c.FillText(label, vg.Point{X: end - pad, Y: y}, text+", off scale")
			continue
		}
		c.FillText(label, vg.Point{X: end + pad, Y: y}, text)
	}
}

// vLine is a labelled vertical marker across a plot (the knee, the
// collapse point). Its label sits at the top (the bottom when low is set),
// on whichever side of the line has more room; row moves it inwards by
// lines of text, so that two markers close together do not write over each
// other.
type vLine struct {
	x      float64
	label  string
	color  color.Color
	dashes []vg.Length
	row    int
	low    bool
}

func (l *vLine) style() draw.LineStyle {
	return draw.LineStyle{Color: l.color, Width: vg.Points(1.2), Dashes: l.dashes}
}

// Plot implements plot.Plotter.
func (l *vLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(l.x)
	c.StrokeLine2(l.style(), x, c.Min.Y, x, c.Max.Y)
	sty := textStyle(9, l.color)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	at := vg.Point{X: x + vg.Points(3), Y: c.Max.Y - vg.Points(2) - vg.Points(11)*vg.Length(l.row)}
	if l.low {
		sty.YAlign, at.Y = draw.YBottom, c.Min.Y+vg.Points(3)+vg.Points(11)*vg.Length(l.row)
	}
	if x > (c.Min.X+c.Max.X)/2 {
		sty.XAlign, at.X = draw.XRight, x-vg.Points(3)
	}
	c.FillText(sty, at, l.label)
}

// DataRange implements plot.DataRanger: the line widens the x range only.
func (l *vLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return l.x, l.x, math.Inf(1), math.Inf(-1)
}

// Thumbnail implements plot.Thumbnailer.
func (l *vLine) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(l.style(), x, c.Min.Y, x, c.Max.Y)
}

// hLine is a labelled horizontal line across a plot (an SLO).
type hLine struct {
	y     float64
	label string
}

func (l *hLine) style() draw.LineStyle {
	return draw.LineStyle{Color: colorSLO, Width: vg.Points(1.4), Dashes: []vg.Length{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}}
}

// Plot implements plot.Plotter.
func (l *hLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(l.y)
	c.StrokeLine2(l.style(), c.Min.X, y, c.Max.X, y)
	sty := textStyle(9, colorSLO)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	c.FillText(sty, vg.Point{X: c.Min.X + vg.Points(4), Y: y + vg.Points(2)}, l.label)
}

// DataRange implements plot.DataRanger: the line widens the y range only.
func (l *hLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), l.y, l.y
}

// Thumbnail implements plot.Thumbnailer.
func (l *hLine) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(l.style(), c.Min.X, y, c.Max.X, y)
}

// swatch is a legend entry for a bar colour.
type swatch struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	in := vg.Points(1.5)
	lo, hi := vg.Point{X: c.Min.X + in, Y: c.Min.Y + in}, vg.Point{X: c.Max.X - in, Y: c.Max.Y - in}
	c.FillPolygon(s.color, []vg.Point{lo, {X: hi.X, Y: lo.Y}, hi, {X: lo.X, Y: hi.Y}})
}
