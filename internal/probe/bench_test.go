//go:build unix

package probe

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/model"
	"github.com/plannerdev/planner/internal/optional"
)

// benchSimEnv, when set to a fakeendpoint.Config in JSON, turns the test binary into
// a simulator process for BenchmarkProbeStreams, so that the probe's CPU
// time is measured apart from the simulator's.
const benchSimEnv = "PLANNER_PROBE_BENCH_SIM"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(benchSimEnv); cfg != "" {
		os.Exit(serveSimProcess(cfg))
	}
	os.Exit(m.Run())
}

// serveSimProcess serves a simulator on 127.0.0.1, prints its address, and
// runs until its standard input closes.
func serveSimProcess(js string) int {
	var cfg fakeendpoint.Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sim config:", err)
		return 2
	}
	srv, err := fakeendpoint.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr())
	go func() { _ = http.Serve(l, srv) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// simProcess is a simulator running in a child process.
type simProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	base  string
}

func startSimProcess(b *testing.B, cfg fakeendpoint.Config) *simProcess {
	b.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchSimEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the simulator process did not start: %v", err)
	}
	return &simProcess{cmd: cmd, stdin: stdin, base: "http://" + strings.TrimSpace(addr) + "/v1"}
}

// stop ends the simulator and returns the CPU time it used.
func (p *simProcess) stop(b *testing.B) time.Duration {
	b.Helper()
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		b.Fatalf("simulator process: %v", err)
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTTFT is the simulator's fixed time to first token.
const benchTTFT = 200 * time.Millisecond

// BenchmarkProbeStreams measures the probe's own cost: a two-step ramp,
// streams/4 then streams, of N = 3·c requests per step, against a
// simulator in another process whose TTFT is fixed (200 ms, no growth, a
// slot for every stream) and whose answers have lognormal lengths (median
// 16 tokens, 20 ms apart). Metrics: ttft-err-p50-ms and ttft-err-p95-ms are
// the measured TTFT minus the configured one over the last step's requests
// after its warm-up; cpu-ns/req is the probe process's CPU time per
// request; sim-cpu-ns/req the simulator's. Run it with
//
//	go test ./internal/probe -run '^$' -bench ProbeStreams -benchtime 1x
func BenchmarkProbeStreams(b *testing.B) {
	for _, streams := range []int{64, 250, 500, 750, 1000, 1500, 2000} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			p := startSimProcess(b, fakeendpoint.Config{
				MaxNumSeqs: streams, TTFT: benchTTFT, ITL: 20 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth, OutputTokens: 16,
			})
			cfg := Config{
				BaseURL: p.base, Model: fakeendpoint.DefaultModel, Steps: []int{streams / 4, streams},
				MaxTokens: optional.Of(64), InputTokens: optional.Of(64), Deadline: optional.Of(time.Minute), Pause: optional.Of(100 * time.Millisecond),
			}
			var cpu time.Duration
			var requests int
			var errs []float64
			for b.Loop() {
				before := processCPU(b)
				res, err := Run(b.Context(), cfg, nil)
				cpu += processCPU(b) - before
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range res.Records {
					if !rec.OK {
						b.Fatalf("a request failed: %+v %v", rec, res.ErrorSamples)
					}
					if !rec.Warmup && rec.Step == streams {
						errs = append(errs, rec.TTFTMs-float64(benchTTFT.Milliseconds()))
					}
				}
				requests += len(res.Records)
			}
			simCPU := p.stop(b)
			slices.Sort(errs)
			b.ReportMetric(model.QuantileSorted(errs, 0.5), "ttft-err-p50-ms")
			b.ReportMetric(model.QuantileSorted(errs, 0.95), "ttft-err-p95-ms")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(requests), "cpu-ns/req")
			b.ReportMetric(float64(simCPU.Nanoseconds())/float64(requests), "sim-cpu-ns/req")
		})
	}
}

// BenchmarkSearchAgainstLadder runs the default ladder 1, 2, 4, … 4 ×
// slots and the knee search up to the same top against a simulator on
// 127.0.0.1 with real sockets and a real clock, for 4, 8, 12, 16 and 64
// slots: requests of 8 tokens (ignore_eos) taking 270 ms below the slot
// count (TTFT 200 ms, 10 ms per token, no growth), 100 ms between steps.
// Metrics: the knee of each and the search's knee_refined; requests
// (sends, retries included), tokens and wall time of the ladder, of the
// search's doubling steps and of its refinement. Run it with
//
//	go test ./internal/probe -run '^$' -bench SearchAgainstLadder -benchtime 1x
func BenchmarkSearchAgainstLadder(b *testing.B) {
	for _, slots := range []int{4, 8, 12, 16, 64} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			_, base := startSim(b, fakeendpoint.Config{MaxNumSeqs: slots, TTFT: 200 * time.Millisecond, ITL: 10 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
			var ladder []int
			for c := 1; c <= 4*slots; c *= 2 {
				ladder = append(ladder, c)
			}
			for b.Loop() {
				for _, search := range []bool{false, true} {
					cfg := Config{BaseURL: base, Model: fakeendpoint.DefaultModel, MaxTokens: optional.Of(8), IgnoreEOS: true, InputTokens: optional.Of(32),
						Pause: optional.Of(100 * time.Millisecond), Steps: ladder}
					if search {
						cfg.Steps, cfg.Search, cfg.SearchMax = nil, true, optional.Of(4*slots)
					}
					res, err := Run(b.Context(), cfg, nil)
					if err != nil || res.Analysis.Knee == nil {
						b.Fatalf("search %v: %v, knee %v", search, err, res.Analysis.Knee)
					}
					sp := res.Spent()
					if !search {
						b.ReportMetric(float64(*res.Analysis.Knee), "knee-ladder")
						b.ReportMetric(float64(sp[0].Requests), "req-ladder")
						b.ReportMetric(float64(sp[0].Tokens), "tok-ladder")
						b.ReportMetric(sp[0].WallS, "s-ladder")
						continue
					}
					b.ReportMetric(float64(*res.Analysis.Knee), "knee-search")
					if r := res.Analysis.KneeRefined; r != nil {
						b.ReportMetric(float64(*r), "knee-refined")
						b.ReportMetric(float64(*res.Analysis.KneeResolution), "resolution")
					}
					b.ReportMetric(float64(sp[0].Requests), "req-search")
					b.ReportMetric(float64(sp[0].Tokens), "tok-search")
					b.ReportMetric(sp[0].WallS, "s-search")
					b.ReportMetric(float64(sp[1].Requests), "req-refine")
					b.ReportMetric(float64(sp[1].Tokens), "tok-refine")
					b.ReportMetric(sp[1].WallS, "s-refine")
				}
			}
		})
	}
}
