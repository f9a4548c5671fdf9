package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/measure"
)

// childEnv, when set to a database path, turns the test binary into the
// writer process of TestKillMidProbeKeepsCommittedRows.
const childEnv = "PLANNER_STORE_DURABILITY_CHILD"

// childBatch is the number of rows the child commits per transaction.
const childBatch = 10

// TestKillMidProbeKeepsCommittedRows runs a writer in a child process that
// saves a plan, starts a probe run and appends rows in a loop, reporting
// each commit; it kills the child with SIGKILL mid-loop and reopens the
// database: the plan is intact, the run is interrupted (on SQLite by the
// next start, on PostgreSQL by the reap of the child's expired lease), and
// every row the child reported committed is there, with no partial batch.
// While the child runs, a SQLite store is locked to it; the kill releases
// the lock.
func TestKillMidProbeKeepsCommittedRows(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		durabilityChild(path)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	eachBackend(t, testKillMidProbe)
}

func testKillMidProbe(t *testing.T, path string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidProbeKeepsCommittedRows$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var planID, probeID string
	committed := 0
	killed := false
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "plan":
			planID = f[1]
		case "probe":
			probeID = f[1]
		case "committed":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			committed = n
			// While the child writes, the store is its own: a second
			// Open fails at once, naming the child.
			if !killed && n >= 50*childBatch && !IsPostgres(path) {
				_, err := Open(context.Background(), path)
				var le *LockedError
				if !errors.As(err, &le) || le.PID != cmd.Process.Pid || !strings.Contains(err.Error(), path) {
					t.Errorf("Open beside the writing child (pid %d): %v", cmd.Process.Pid, err)
				}
			}
			// Kill once a good number of batches are in, while the
			// child keeps appending.
			if !killed && n >= 50*childBatch {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the child ended before it was killed: %v", err)
	}
	if planID == "" || probeID == "" {
		t.Fatalf("the child reported no plan or probe (plan %q, probe %q)", planID, probeID)
	}

	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Shared() {
		// The child's lease lasted no time: nothing reaped it while the
		// child ran, and anything may now.
		if reaped, _, err := s.ReapLeases(ctx, "parent", time.Minute); err != nil || !slices.Equal(reaped, []string{probeID}) {
			t.Fatalf("reap the child's lease: %v %v", reaped, err)
		}
	}
	p, err := s.GetPlan(ctx, planID)
	if err != nil {
		t.Fatal(err)
	}
	if want := examplePlan(t, "measured-curve"); jsonOf(t, p.Plan) != jsonOf(t, want.Plan) || jsonOf(t, p.Scenario) != jsonOf(t, want.Scenario) || p.ProbeID != probeID {
		t.Error("the plan written before the kill changed")
	}
	run, err := s.GetProbe(ctx, probeID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != StatusInterrupted || run.FinishedAt.IsZero() {
		t.Errorf("after the kill the run is %s (finished %v), want interrupted", run.Status, run.FinishedAt)
	}
	recs, err := s.Records(ctx, probeID)
	if err != nil {
		t.Fatal(err)
	}
	// The child may have committed one more batch than it could report.
	if len(recs) < committed || len(recs) > committed+childBatch || len(recs)%childBatch != 0 {
		t.Fatalf("%d rows after the kill; the child reported %d committed in batches of %d", len(recs), committed, childBatch)
	}
	if run.Counts.Records != len(recs) {
		t.Errorf("counts say %d rows, the table has %d", run.Counts.Records, len(recs))
	}
	for i, r := range recs {
		if r != record(1, i) {
			t.Fatalf("row %d is %+v, want %+v", i, r, record(1, i))
		}
	}
	t.Logf("killed after %d reported rows; %d rows kept", committed, len(recs))
}

// durabilityChild is the writer process: it never returns normally.
func durabilityChild(path string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	s, err := Open(ctx, path)
	if err != nil {
		fail(err)
	}
	l, err := s.AcquireSlot(ctx, "child", 1, 0)
	if err != nil {
		fail(err)
	}
	probeID, err := s.StartProbe(ctx, l, ProbeRun{Status: StatusRunning, BaseURL: "http://127.0.0.1:8000/v1", Model: "m",
		Config: []byte(`{"steps":[1]}`)})
	if err != nil {
		fail(err)
	}
	p := examplePlan(fatalTB{fail}, "measured-curve")
	p.ProbeID = probeID
	planID, err := s.SavePlan(ctx, p)
	if err != nil {
		fail(err)
	}
	fmt.Printf("plan %s\nprobe %s\n", planID, probeID)
	for n := 0; ; n += childBatch {
		batch := make([]measure.Record, childBatch)
		for i := range batch {
			batch[i] = record(1, n+i)
		}
		if err := s.AppendRecords(ctx, probeID, batch); err != nil {
			fail(err)
		}
		fmt.Printf("committed %d\n", n+childBatch)
	}
}

// fatalTB lets the child use the test helpers outside a test.
type fatalTB struct{ fail func(error) }

func (fatalTB) Helper()                          {}
func (f fatalTB) Fatal(args ...any)              { f.fail(fmt.Errorf("%s", fmt.Sprint(args...))) }
func (f fatalTB) Fatalf(format string, a ...any) { f.fail(fmt.Errorf(format, a...)) }
