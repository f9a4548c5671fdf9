// Package reportcheck verifies, for tests, that reports and charts are
// self-contained and readable: nothing loaded from elsewhere, every chart an
// inline SVG with a title and labelled axes.
package reportcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ChartInfo is what CheckHTML and CheckSVG read from one chart.
type ChartInfo struct {
	Kind    string   // data-chart: ceilings, throughput or latency
	Title   string   // the <title> element
	XLabel  string   // the x-axis label
	YLabels []string // the y-axis label of each panel
}

// CheckHTML parses an HTML report and verifies that it is self-contained
// and that its charts are readable: nothing is loaded from elsewhere (no
// script, image, frame, object, stylesheet link, or src/href/url() that
// points outside the page), and every chart is an inline <svg> element
// with a title whose axis labels are named on the element and drawn as
// text inside it. It returns the charts in document order.
func CheckHTML(r io.Reader) ([]ChartInfo, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	var charts []ChartInfo
	var errs []error
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.DataAtom {
		case atom.Script, atom.Img, atom.Iframe, atom.Object, atom.Embed, atom.Link, atom.Video, atom.Audio, atom.Picture:
			errs = append(errs, fmt.Errorf("a <%s> element: the report must need nothing outside the page", n.Data))
		case atom.Style:
			if err := checkCSS(textOf(n)); err != nil {
				errs = append(errs, fmt.Errorf("<style>: %w", err))
			}
		}
		for _, a := range n.Attr {
			if err := checkReference(n, a); err != nil {
				errs = append(errs, err)
			}
		}
		if n.Data == "svg" && n.Namespace == "svg" && !insideSVG(n) {
			info, err := checkChart(n)
			if err != nil {
				errs = append(errs, fmt.Errorf("chart %d: %w", len(charts)+1, err))
			}
			charts = append(charts, info)
		}
	}
	return charts, errors.Join(errs...)
}

// CheckSVG verifies one chart document as served alone (a probe's
// plot.svg): a single <svg> element that passes the checks of CheckHTML.
func CheckSVG(doc []byte) (ChartInfo, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(doc), []byte("<svg")) {
		return ChartInfo{}, errors.New("the document does not start with an <svg> element")
	}
	charts, err := CheckHTML(bytes.NewReader(doc))
	if err != nil {
		return ChartInfo{}, err
	}
	if len(charts) != 1 {
		return ChartInfo{}, fmt.Errorf("%d charts in the document, want 1", len(charts))
	}
	return charts[0], nil
}

// checkReference refuses attributes that make a browser fetch something:
// src, href and xlink:href other than fragment links within the page, and
// url() in styles other than fragments.
func checkReference(n *html.Node, a html.Attribute) error {
	v := strings.TrimSpace(a.Val)
	switch strings.ToLower(a.Key) {
	case "src", "srcset", "href", "poster", "data", "action", "formaction":
		if !strings.HasPrefix(v, "#") {
			return fmt.Errorf("<%s %s=%q> points outside the page", n.Data, a.Key, v)
		}
	case "style":
		if err := checkCSS(v); err != nil {
			return fmt.Errorf("<%s style>: %w", n.Data, err)
		}
	}
	return nil
}

// checkCSS refuses url() and @import references other than fragments.
func checkCSS(css string) error {
	lower := strings.ToLower(css)
	if strings.Contains(lower, "@import") {
		return errors.New("@import loads a stylesheet from outside the page")
	}
	for rest := lower; ; {
		i := strings.Index(rest, "url(")
		if i < 0 {
			return nil
		}
		rest = rest[i+len("url("):]
		arg := strings.TrimLeft(rest, " \t\"'")
		if !strings.HasPrefix(arg, "#") {
			return errors.New("url() loads a resource from outside the page")
		}
	}
}

func insideSVG(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Namespace == "svg" {
			return true
		}
	}
	return false
}

// checkChart reads a chart's annotations and verifies that its title and
// every axis label are there and drawn.
func checkChart(svg *html.Node) (ChartInfo, error) {
	info := ChartInfo{Kind: attr(svg, "data-chart"), XLabel: attr(svg, "data-x-label")}
	if y := attr(svg, "data-y-label"); y != "" {
		// data-y-label lists the panels' labels separated by semicolons.
		for l := range strings.SplitSeq(y, ";") {
			info.YLabels = append(info.YLabels, strings.TrimSpace(l))
		}
	}
	drawn := map[string]bool{}
	for n := range svg.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "title":
			if info.Title == "" {
				info.Title = textOf(n)
			}
		case "text":
			drawn[textOf(n)] = true
		}
	}
	var errs []error
	if info.Kind == "" {
		errs = append(errs, errors.New("no data-chart attribute: not a planner chart"))
	}
	if info.Title == "" {
		errs = append(errs, errors.New("no <title>"))
	}
	if info.XLabel == "" {
		errs = append(errs, errors.New("the x axis has no label"))
	} else if !drawn[info.XLabel] {
		errs = append(errs, fmt.Errorf("the x-axis label %q is not drawn", info.XLabel))
	}
	if len(info.YLabels) == 0 {
		errs = append(errs, errors.New("the y axis has no label"))
	}
	for _, y := range info.YLabels {
		if y == "" || !drawn[y] {
			errs = append(errs, fmt.Errorf("the y-axis label %q is not drawn", y))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return info, fmt.Errorf("%s %q: %w", info.Kind, info.Title, err)
	}
	return info, nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.TrimSpace(b.String())
}
