package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/jobs"
	"github.com/plannerdev/planner/internal/measure"
)

// TestProbeEvents reads a running probe's events with a real HTTP client
// until the stream ends: status running, progress while each step runs,
// one step event per step in order, the final status, then done with the
// whole probe. A client that connects after the end gets done at once.
func TestProbeEvents(t *testing.T) {
	env := newProbeEnv(t, Options{})
	s := newSim(t, midSim)
	id := startProbe(t, env, probeBody(s.url, []int{1, 2, 4}, 44)) // at most 1 s per step
	start := time.Now()
	evs := readEvents(t, env.url+"/v1/probes/"+id+"/events")
	if len(evs) < 6 {
		t.Fatalf("%d events: %v", len(evs), evs)
	}
	if evs[0].name != "status" || (evs[0].data != `{"status":"running"}` && evs[0].data != `{"status":"queued"}`) {
		t.Fatalf("first event %v", evs[0])
	}
	var steps []int
	progress := map[int]int{}
	sawRunning := false
	for i, ev := range evs {
		switch ev.name {
		case "status":
			var st ProbeStatusEvent
			mustUnmarshal(t, ev.data, &st)
			sawRunning = sawRunning || st.Status == "running"
			if i > 1 && i != len(evs)-2 {
				t.Errorf("status event at %d of %d: %s", i, len(evs), ev.data)
			}
		case "progress":
			var p jobs.Progress
			mustUnmarshal(t, ev.data, &p)
			if len(steps) > 0 && p.Step <= steps[len(steps)-1] {
				t.Errorf("progress of step %d after step %d ended", p.Step, steps[len(steps)-1])
			}
			progress[p.Step]++
		case "step":
			var st measure.Step
			mustUnmarshal(t, ev.data, &st)
			if st.Requests == 0 || st.OK != st.Requests {
				t.Errorf("step event %s", ev.data)
			}
			steps = append(steps, st.Concurrency)
		case "done":
			if i != len(evs)-1 {
				t.Errorf("done is event %d of %d", i, len(evs))
			}
		default:
			t.Errorf("unknown event %q", ev.name)
		}
	}
	final := evs[len(evs)-1]
	var p Probe
	mustUnmarshal(t, final.data, &p)
	// 44 requests per step; a step whose gain over the one before was
	// within its noise of the knee rule's threshold (a busy machine) is
	// measured twice as long, and says so.
	extended := slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "measured twice as long") })
	if final.name != "done" || p.Status != "succeeded" || len(p.Steps) != 3 || (p.Counts.Records != 132 && !(extended && p.Counts.Records <= 264)) {
		t.Fatalf("done event %s", final.data)
	}
	if evs[len(evs)-2].data != `{"status":"succeeded"}` || !sawRunning {
		t.Errorf("status events: running %v, before done %s", sawRunning, evs[len(evs)-2].data)
	}
	if len(steps) != 3 || steps[0] != 1 || steps[1] != 2 || steps[2] != 4 || progress[1] == 0 || progress[2] == 0 {
		t.Fatalf("steps %v, progress events by step %v", steps, progress)
	}
	t.Logf("%d events over %s", len(evs), time.Since(start).Round(time.Millisecond))

	late := time.Now()
	again := readEvents(t, env.url+"/v1/probes/"+id+"/events")
	if len(again) != 1 || again[0].name != "done" || time.Since(late) > 2*time.Second {
		t.Fatalf("late subscriber: %v after %s", again, time.Since(late))
	}
	var p2 Probe
	mustUnmarshal(t, again[0].data, &p2)
	if p2.ID != id || p2.Status != "succeeded" || len(p2.Steps) != 3 {
		t.Fatalf("late done %s", again[0].data)
	}
}

// TestProbeEventsMidRun connects after the first step: the stream starts
// with the current status and the steps already finished.
func TestProbeEventsMidRun(t *testing.T) {
	env := newProbeEnv(t, Options{})
	s := newSim(t, midSim)
	id := startProbe(t, env, probeBody(s.url, []int{1, 2}, 42))
	waitProbe(t, env, id, func(p Probe) bool { return len(p.Steps) == 1 })
	evs := readEvents(t, env.url+"/v1/probes/"+id+"/events")
	if len(evs) < 4 || evs[0].data != `{"status":"running"}` || evs[1].name != "step" || evs[len(evs)-1].name != "done" {
		t.Fatalf("events %v", evs)
	}
	steps := 0
	for _, ev := range evs {
		if ev.name == "step" {
			steps++
		}
	}
	if steps != 2 {
		t.Fatalf("%d step events", steps)
	}
}

func mustUnmarshal(t *testing.T, data string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
}
