//go:build !race

// The README's commands take their documented time (a probe of about half
// a minute); the race detector would only slow them down, and the code
// they run is raced by the package's other tests.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/testutil"
)

// TestREADME runs the shell blocks of README.md in order, as a reader
// would paste them into one shell, and checks what the README says they
// print. `go run ./cmd/planner ARGS` runs this package's command line in
// the test; the servers the README starts (planner serve, planner sim)
// listen on ephemeral loopback ports instead of the README's, and every
// command's arguments have the README's addresses replaced by the real
// ones. curl and jq are the system's; curl gets --fail-with-body, so that
// an HTTP error fails the command. A command succeeds unless its comment
// says which exit status it ends with ("exit status 1"). `go test ./...` is this run itself and
// go generate is checked by the generators' tests: both are left out.
func TestREADME(t *testing.T) {
	for _, tool := range []string{"curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README uses %s: install it (apt-get install %s)", tool, tool)
		}
	}
	cleanServeEnv(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scenario, err := os.ReadFile("../../docs/examples/chat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The README's own scenario file, as a reader would have written it.
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), scenario, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sh := newReadmeShell(t, ctx, dir, "README.md")
	if ran := sh.runDoc(string(readme)); ran < 10 {
		t.Fatalf("only %d commands found in the README's shell blocks", ran)
	}
}

// TestDocs runs the shell blocks of every docs/*.md as TestREADME runs
// the README's, each file in a shell of its own, in a directory with the
// files a reader would have: scenario.yaml (docs/examples/chat.yaml),
// ramp.csv (a workshop ramp, docs/import.md) and probe-out/requests.csv
// (a probe's requests). `planner ARGS` is this package's command line. A
// block that needs what the test cannot have (another tool, a GPU
// server, a provider's key, the network, minutes of benchmarks) is marked
// by an HTML comment on the line before it, "<!-- not run by the docs
// test: why -->", and skipped with that reason.
func TestDocs(t *testing.T) {
	for _, tool := range []string{"curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs use %s: install it (apt-get install %s)", tool, tool)
		}
	}
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	chat, err := os.ReadFile("../../docs/examples/chat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ramp, err := os.ReadFile(workshopRamp)
	if err != nil {
		t.Fatal(err)
	}
	var records []measure.Record
	for i := range 40 {
		records = append(records, measure.Record{Step: 1, Index: i, StartS: 0.5 * float64(i), AckMs: 90, TTFTMs: 100, E2EMs: 600,
			OutputTokens: 20, InputTokens: 50, Status: 200, Attempts: 1, OK: true})
	}
	var requests bytes.Buffer
	if err := measure.WriteCSV(&requests, records); err != nil {
		t.Fatal(err)
	}
	total, done := 0, 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := "docs/" + filepath.Base(file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			cleanServeEnv(t)
			dir := t.TempDir()
			for path, body := range map[string][]byte{"scenario.yaml": chat, "ramp.csv": ramp, "probe-out/requests.csv": requests.Bytes()} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, path), body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			total += newReadmeShell(t, ctx, dir, name).runDoc(string(text))
			done++
		})
	}
	if done == len(files) && total < 20 {
		t.Errorf("only %d commands ran in the docs' shell blocks", total)
	}
}

// skipMark is the comment that marks a block the docs test does not run,
// with the reason.
var skipMark = regexp.MustCompile(`^<!-- not run by the docs test: (.+) -->$`)

// runDoc runs the shell blocks of a Markdown document in order, each
// checked against the plain block after it when there is one, and returns
// how many statements ran.
func (sh *readmeShell) runDoc(md string) int {
	blocks := fencedBlocks(md)
	ran := 0
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		if m := skipMark.FindStringSubmatch(b.before); m != nil {
			sh.t.Logf("%s line %d: not run: %s", sh.doc, b.line, m[1])
			continue
		}
		var expect string
		if i+1 < len(blocks) && blocks[i+1].lang == "" {
			expect = blocks[i+1].text
		}
		ran += sh.runBlock(b, expect)
	}
	return ran
}

// block is one fenced code block of a Markdown file, with the line
// before it.
type block struct {
	lang, text, before string
	line               int
}

var fence = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```$")

func fencedBlocks(md string) []block {
	var out []block
	for _, m := range fence.FindAllStringSubmatchIndex(md, -1) {
		head := strings.TrimRight(md[:m[0]], "\n")
		before := head[strings.LastIndex(head, "\n")+1:]
		out = append(out, block{lang: md[m[2]:m[3]], text: md[m[4]:m[5]], before: before, line: 1 + strings.Count(md[:m[0]], "\n")})
	}
	return out
}

// readmeShell is one shell session over a document's blocks.
type readmeShell struct {
	t      *testing.T
	doc    string // the document's name in messages: README.md
	ctx    context.Context
	runner *interp.Runner
	// addrs maps the README's listen addresses to the real ones.
	addrs   map[string]string
	servers []*readmeServer
}

// readmeServer is a server that a README command started.
type readmeServer struct {
	name   string
	out    *addrWriter
	errOut *testutil.SyncBuffer
	stop   context.CancelFunc
	code   chan int
}

func newReadmeShell(t *testing.T, ctx context.Context, dir, doc string) *readmeShell {
	sh := &readmeShell{t: t, doc: doc, ctx: ctx, addrs: map[string]string{}}
	r, err := interp.New(
		interp.Dir(dir),
		interp.Env(expand.ListEnviron(os.Environ()...)),
		interp.ExecHandlers(sh.exec),
	)
	if err != nil {
		t.Fatal(err)
	}
	sh.runner = r
	t.Cleanup(sh.stopServers)
	return sh
}

// runBlock runs a block's statements one by one and checks each; expect,
// when set, is what the first statement's output starts with. It returns
// how many statements ran.
func (sh *readmeShell) runBlock(b block, expect string) int {
	t := sh.t
	file, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(b.text), sh.doc)
	if err != nil {
		t.Fatalf("%s line %d: the block does not parse as shell: %v", sh.doc, b.line, err)
	}
	for i, stmt := range file.Stmts {
		line := b.line + int(stmt.Pos().Line())
		source := strings.TrimSpace(b.text[stmt.Pos().Offset():stmt.End().Offset()])
		// A server started in the background is started here and
		// waited for, so that the next command finds it listening.
		stmt.Background = false
		var out, errOut bytes.Buffer
		if err := interp.StdIO(nil, &out, &errOut)(sh.runner); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		err := sh.runner.Run(sh.ctx, stmt)
		t.Logf("%s line %d (%s): %s", sh.doc, line, time.Since(started).Round(time.Millisecond), source)
		var status interp.ExitStatus
		switch want := promisedStatus(stmt); {
		case want != 0 && (!errors.As(err, &status) || int(status) != want):
			t.Fatalf("%s line %d: %s\nit says it exits with status %d; it ended with %v\n%s%s", sh.doc, line, source, want, err, out.String(), errOut.String())
		case want == 0 && err != nil:
			t.Fatalf("%s line %d: %s\nfailed: %v\n%s%s", sh.doc, line, source, err, out.String(), errOut.String())
		}
		for _, want := range promised(stmt) {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s line %d: %s\nit says it prints %q; it printed:\n%.2000s", sh.doc, line, source, want, out.String())
			}
		}
		if i == 0 && expect != "" && !strings.HasPrefix(out.String(), expect) {
			t.Errorf("%s line %d: %s\nit shows output that starts:\n%s\nit printed:\n%.3000s", sh.doc, line, source, expect, out.String())
		}
		sh.checkOutput(line, source, out.Bytes())
	}
	return len(file.Stmts)
}

// quoted finds the "text" in a comment.
var quoted = regexp.MustCompile(`until "([^"]+)"`)

// promised is what the comments on a statement say it prints: the text
// quoted after "until" in its trailing comment.
func promised(stmt *syntax.Stmt) []string {
	var out []string
	for _, c := range stmt.Comments {
		if c.Pos().Line() < stmt.Pos().Line() {
			continue // a comment line above the statement
		}
		for _, m := range quoted.FindAllStringSubmatch(c.Text, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// exitStatus finds "exit status N" in a comment.
var exitStatus = regexp.MustCompile(`exit status ([0-9]+)`)

// promisedStatus is the exit status that a statement's trailing comment
// says it ends with ("exit status 1"), 0 when it says none.
func promisedStatus(stmt *syntax.Stmt) int {
	for _, c := range stmt.Comments {
		if c.Pos().Line() < stmt.Pos().Line() {
			continue
		}
		if m := exitStatus.FindStringSubmatch(c.Text); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}

// checkOutput checks what the README says about the output of a kind of
// command: JSON where JSON was asked for, and the plan, grid or probe that
// the API answers.
func (sh *readmeShell) checkOutput(line int, source string, out []byte) {
	t := sh.t
	isJSON := strings.Contains(source, "-o json") || strings.HasPrefix(source, "curl") && strings.Contains(source, "/v1/") && !strings.Contains(source, "/events")
	if !isJSON || strings.Contains(source, "--out ") {
		return
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Errorf("%s line %d: %s\nprints no JSON object: %v\n%.500s", sh.doc, line, source, err, out)
		return
	}
	switch {
	case strings.Contains(source, "/v1/plans") || strings.Contains(source, "planner plan"):
		// The answer is the plan, with every class's pool and binding
		// constraint.
		classes, _ := v["classes"].([]any)
		if len(classes) == 0 {
			t.Errorf("%s line %d: the plan has no classes: %.500s", sh.doc, line, out)
		}
		for _, c := range classes {
			c, _ := c.(map[string]any)
			if _, ok := c["pool"].(float64); !ok || c["binding_constraint"] == "" || c["binding_constraint"] == nil {
				t.Errorf("%s line %d: a class without a pool or binding constraint: %v", sh.doc, line, c)
			}
		}
	case strings.Contains(source, "/v1/what-if"):
		// One cell per value of the variation.
		vars, _ := v["variations"].([]any)
		cells, _ := v["cells"].([]any)
		want := 1
		for _, x := range vars {
			values, _ := x.(map[string]any)["values"].([]any)
			want *= len(values)
		}
		if len(vars) == 0 || len(cells) != want {
			t.Errorf("%s line %d: %d cells for %d variations, want %d", sh.doc, line, len(cells), len(vars), want)
		}
	}
}

// exec runs a command of the README.
func (sh *readmeShell) exec(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		args = sh.mapAddrs(args)
		switch {
		case slices.Equal(args, []string{"go", "test", "./..."}):
			return nil // the run this test is part of
		case len(args) >= 2 && args[0] == "go" && args[1] == "generate":
			return nil // the generators' own tests check that their files are current
		case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/planner":
			return sh.planner(ctx, args[3:])
		case args[0] == "planner":
			return sh.planner(ctx, args[1:])
		case args[0] == "curl":
			args = append([]string{"curl", "--fail-with-body", "--show-error"}, args[1:]...)
		}
		return next(ctx, args)
	}
}

// planner runs the command line in this process; a server starts in the
// background, on an ephemeral port, and the command returns once it
// listens.
func (sh *readmeShell) planner(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	name := "serve"
	if len(args) > 0 {
		name = args[0]
	}
	if name != "serve" && name != "sim" {
		if code := run(ctx, args, hc.Stdin, hc.Stdout, hc.Stderr); code != exitOK {
			return interp.ExitStatus(uint8(code))
		}
		return nil
	}
	readmeAddr := map[string]string{"serve": "127.0.0.1:8080", "sim": "127.0.0.1:8000"}[name]
	if i := slices.Index(args, "--listen"); i >= 0 && i+1 < len(args) {
		readmeAddr = args[i+1]
	}
	if _, ok := sh.addrs[readmeAddr]; ok {
		return nil // already running, as in a shell where it still runs
	}
	srvCtx, stop := context.WithCancel(context.Background())
	s := &readmeServer{name: name, out: &addrWriter{found: make(chan string, 1)}, errOut: &testutil.SyncBuffer{}, stop: stop, code: make(chan int, 1)}
	sh.servers = append(sh.servers, s)
	go func() {
		s.code <- run(srvCtx, append(args, "--listen", "127.0.0.1:0"), strings.NewReader(""), s.out, s.errOut)
	}()
	select {
	case addr := <-s.out.found:
		sh.addrs[readmeAddr] = addr
		fmt.Fprintf(hc.Stderr, "%s listening on %s for the README's %s\n", name, addr, readmeAddr)
		return nil
	case code := <-s.code:
		s.code <- code
		return fmt.Errorf("%s exited with %d: %s%s", name, code, s.out, s.errOut)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mapAddrs puts the real addresses in place of the README's.
func (sh *readmeShell) mapAddrs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for from, to := range sh.addrs {
			a = strings.ReplaceAll(a, from, to)
		}
		out[i] = a
	}
	return out
}

// stopServers stops the servers the README started; each must stop
// cleanly.
func (sh *readmeShell) stopServers() {
	for _, s := range sh.servers {
		s.stop()
		select {
		case code := <-s.code:
			if code != exitOK {
				sh.t.Errorf("%s exited with %d: %s", s.name, code, s.errOut.String())
			}
		case <-time.After(time.Minute):
			sh.t.Errorf("%s did not stop", s.name)
		}
	}
}
