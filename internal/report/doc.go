// Package report renders plans and measurements for people: a terminal
// table, Markdown and HTML documents, and SVG charts.
package report
