package plan

import (
	"strings"
	"testing"

	"github.com/plannerdev/planner/internal/scenario"
)

// TestCurve429sWarnings: 429s in a measured curve warn that the quota bound
// the measurement only when their share rises with concurrency up to the
// knee; a steady share (random throttling, other traffic on the key) gets
// its own warning, and 429s beyond the knee none.
func TestCurve429sWarnings(t *testing.T) {
	const rising, steady = "rises with concurrency up to the knee", "does not rise with concurrency"
	type pt struct {
		rate     float64
		requests int
	}
	for _, tc := range []struct {
		name string
		pts  [3]pt // at concurrency 4, 8, 16
		knee int
		want string
	}{
		{"none", [3]pt{{0, 200}, {0, 200}, {0, 200}}, 16, ""},
		{"rising share, counted", [3]pt{{0, 200}, {0.05, 200}, {0.2, 200}}, 16, rising},
		{"steady share, counted", [3]pt{{0.02, 200}, {0.02, 200}, {0.02, 200}}, 16, steady},
		// One 429 in 200 at 4 and one in 200 at 8: z = 0.67, chance.
		{"random 429s, counted", [3]pt{{0, 200}, {0.005, 200}, {0.005, 200}}, 16, steady},
		{"rising share, uncounted", [3]pt{{0, 0}, {0.01, 0}, {0.02, 0}}, 16, rising},
		{"steady share, uncounted", [3]pt{{0.01, 0}, {0.01, 0}, {0.01, 0}}, 16, steady},
		{"beyond the knee only", [3]pt{{0, 200}, {0, 200}, {0.3, 200}}, 8, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := curveScenario()
			s.Latency.Curve = nil
			for i, c := range []int{4, 8, 16} {
				s.Latency.Curve = append(s.Latency.Curve, scenario.CurvePoint{
					Concurrency: c, TTFTP50Ms: 200, TTFTP95Ms: 200 * float64(c), TPOTP50Ms: 20, TPOTP95Ms: 20,
					RateLimitedRate: tc.pts[i].rate, Requests: tc.pts[i].requests,
				})
			}
			s.Latency.Knee = intPtr(tc.knee)
			w := strings.Join(mustPlan(t, s).Classes[0].Warnings, "\n")
			for _, phrase := range []string{rising, steady} {
				if has := strings.Contains(w, phrase); has != (phrase == tc.want) {
					t.Errorf("warning %q present = %v, want %v; warnings:\n%s", phrase, has, !has, w)
				}
			}
		})
	}
}
