package reportcheck

import (
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/report"
)

func TestCheckHTML(t *testing.T) {
	two := 2
	chart, err := report.CeilingsSVG(plan.ClassPlan{Name: "c", Pool: 2, BindingConstraint: "rpm", Ceilings: []plan.Ceiling{{Constraint: "rpm", MaxPool: &two}}})
	if err != nil {
		t.Fatal(err)
	}
	page := func(body string) string {
		return "<!DOCTYPE html><html><head><title>t</title><style>p{color:red}</style></head><body>" + body + "</body></html>"
	}
	unlabelled := `<svg xmlns="http://www.w3.org/2000/svg" data-chart="x" data-x-label="time (s)" data-y-label="load"><title>t</title><text>time (s)</text></svg>`
	tests := []struct {
		name   string
		html   string
		charts int
		want   string // in the error; empty when the page passes
	}{
		{"inline chart", page("<p>x</p>" + string(chart)), 1, ""},
		{"two charts", page(string(chart) + "<p>x</p>" + string(chart)), 2, ""},
		{"fragment link", page(`<a href="#top">top</a>`), 0, ""},
		{"script", page("<script>alert(1)</script>"), 0, "<script>"},
		{"image", page(`<img src="plot.svg" alt="">`), 0, "<img>"},
		{"external link", page(`<a href="https://example.com/">x</a>`), 0, "points outside the page"},
		{"stylesheet", `<html><head><link rel="stylesheet" href="s.css"></head><body></body></html>`, 0, "<link>"},
		{"css url", page(`<p style="background:url(http://x/y.png)">x</p>`), 0, "url()"},
		{"css import", `<html><head><style>@import "x.css";</style></head><body></body></html>`, 0, "@import"},
		{"svg image", page(`<svg xmlns="http://www.w3.org/2000/svg"><image href="x.png"/></svg>`), 1, "points outside the page"},
		{"plain svg", page(`<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>`), 1, "not a planner chart"},
		{"y label not drawn", page(unlabelled), 1, `the y-axis label "load" is not drawn`},
		{"no x label", page(strings.Replace(string(chart), "data-x-label=", "data-other=", 1)), 1, "the x axis has no label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			charts, err := CheckHTML(strings.NewReader(tc.html))
			if len(charts) != tc.charts {
				t.Errorf("%d charts, want %d", len(charts), tc.charts)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestCheckSVG(t *testing.T) {
	two := 2
	svg, err := report.CeilingsSVG(plan.ClassPlan{Name: "c", Pool: 2, BindingConstraint: "rpm", Ceilings: []plan.Ceiling{{Constraint: "rpm", MaxPool: &two}}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := CheckSVG(svg)
	if err != nil || info.Kind != report.ChartCeilings {
		t.Fatalf("%+v, %v", info, err)
	}
	if _, err := CheckSVG([]byte("<html><body>" + string(svg) + "</body></html>")); err == nil {
		t.Error("a page accepted as a bare SVG document")
	}
	if _, err := CheckSVG(append(append([]byte{}, svg...), svg...)); err == nil {
		t.Error("two charts accepted as one document")
	}
}
