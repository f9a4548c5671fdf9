// Package measure is the data model of a measured ramp: one Record per
// request (the rows of requests.csv), one Step per concurrency with its
// confidence intervals, and the Result that judges them (knee, collapse,
// USL fit), with what a probe's answers named as their model (Served, and
// the rule that matches a served name to the one asked) and how its
// requests got their connections (ConnStats). Probes, importers, the
// store and the API all carry these types; package analysis holds the
// rules that judge a ramp.
package measure
