package api

import (
	"net/http"
	"testing"
)

// BenchmarkCreatePlanThreeClasses answers POST /v1/plans for
// docs/examples/three-classes.yaml in process: decoding, validation,
// planning and encoding, without the network (docs/benchmarks.md measures
// the server over loopback).
func BenchmarkCreatePlanThreeClasses(b *testing.B) {
	s := newServer(b, Options{})
	body := mustJSON(b, map[string]any{"scenario": exampleDoc(b, "three-classes")})
	b.ReportAllocs()
	for b.Loop() {
		if rec := send(s, http.MethodPost, "/v1/plans", body); rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
