// Package measure is the data model of a measured ramp: one Record per
// request (the rows of requests.csv), one Step per concurrency with its
// confidence intervals, and the Result that judges them (knee, collapse,
// USL fit). Probes, importers, the store and the API all carry these
// types; package analysis holds the rules that compute them.
package measure
