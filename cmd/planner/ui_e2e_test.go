//go:build !race

// The browser test waits on the page with timeouts sized for a normal
// build; under the race detector the service plans several times slower.
// CI runs it in its own step, without the race detector; the code it
// drives is raced by the package's other tests and by api's.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"sigs.k8s.io/yaml"

	"github.com/plannerdev/planner"
	"github.com/plannerdev/planner/internal/app"
	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/plan"
	"github.com/plannerdev/planner/internal/scenario"
	"github.com/plannerdev/planner/internal/simulate"
	"github.com/plannerdev/planner/internal/testutil"
)

// The browser test drives the page of `planner serve` in headless
// Chromium. It skips when no Chromium is installed, unless PLANNER_E2E=1,
// where a missing browser fails it. With PLANNER_UI_SCREENSHOTS=1 it
// writes the screenshots of docs/ui.md into docs/ui/.

const (
	e2eEnv        = "PLANNER_E2E"
	screenshotEnv = "PLANNER_UI_SCREENSHOTS"
	e2eExample    = "three-classes"
)

// chromiumPath finds the browser, or skips (fails under PLANNER_E2E=1).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(e2eEnv) == "1" {
		t.Fatalf("%s=1 but no Chromium is installed (apt-get install chromium)", e2eEnv)
	}
	t.Skipf("no Chromium installed; set %s=1 to make this a failure", e2eEnv)
	return ""
}

// browser starts headless Chromium with a fresh profile and returns a tab
// context, closed when the test ends.
func browser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	return tab
}

// pageClass is one class row as the page shows it.
type pageClass struct {
	Name    string `json:"name"`
	Pool    string `json:"pool"`
	Binding string `json:"binding"`
}

// readClasses reads the class rows under a selector: the plan table
// ("#plan-body tbody[data-class]") or the what-if readout.
func readClasses(selector string) chromedp.Action[[]pageClass] {
	return chromedp.Evaluate[[]pageClass](fmt.Sprintf(`[...document.querySelectorAll(%q)].map((row) => ({
		name: row.dataset.class,
		pool: row.querySelector('[data-field=pool]').textContent.trim(),
		binding: row.querySelector('[data-field=binding] mark').textContent.trim(),
	}))`, selector))
}

// script runs JavaScript for its effect.
func script(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { %s })()`, js))
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(cond string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := poll(ctx, t)
		return err
	})
}

// setSelect chooses an option of a select as a person would, firing change.
func setSelect(selector, value string) chromedp.Action[chromedp.Void] {
	return script(fmt.Sprintf(`const el = document.querySelector(%q);
		el.value = %q;
		el.dispatchEvent(new Event('change', { bubbles: true }));`, selector, value))
}

// screenshot writes the viewport to docs/ui/name when screenshots are on.
func screenshot(t *testing.T, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		if os.Getenv(screenshotEnv) != "1" {
			return nil
		}
		png, err := chromedp.CaptureScreenshot()(ctx, target)
		if err != nil {
			return err
		}
		path := filepath.Join("..", "..", "docs", "ui", name)
		t.Logf("writing %s", path)
		return os.WriteFile(path, png, 0o644)
	})
}

// scrollTo scrolls an element into view: "start" puts it at the top of
// the viewport, "end" at the bottom.
func scrollTo(selector, block string) chromedp.Action[chromedp.Void] {
	return script(fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: %q});`, selector, block))
}

// read runs one action that returns a value, failing the test on an error.
func read[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs actions, failing the test on an error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// postJSON calls the API of the running server.
func postJSON(t *testing.T, url string, body, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// startProbe fills the probe form for the simulator at base and starts the
// probe; finishProbe waits for its end and returns its id and knee.
func startProbe(t *testing.T, tab context.Context, base, steps string) {
	t.Helper()
	do(t, tab,
		scrollTo("#probe", "start"),
		chromedp.SetValue(chromedp.CSS("#probe-base-url"), base),
		chromedp.SetValue(chromedp.CSS("#probe-model"), fakeendpoint.DefaultModel),
		chromedp.SetValue(chromedp.CSS("#probe-steps"), steps),
		chromedp.SetValue(chromedp.CSS("#probe-requests"), ""), // the default size, as the CLI's
		chromedp.SetValue(chromedp.CSS("#probe-max-tokens"), "16"),
		chromedp.Click(chromedp.CSS("#probe-start")),
	)
}

var probeID = regexp.MustCompile(`^Probe ([a-z0-9]+): succeeded`)

func finishProbe(t *testing.T, tab context.Context) (id, knee string) {
	t.Helper()
	if err := chromedp.Do(tab, waitFor(`['succeeded', 'failed', 'cancelled', 'interrupted'].includes(document.querySelector('#probe').dataset.status)`)); err != nil {
		t.Fatalf("the probe did not finish: %v; the page says: %s", err,
			read(t, tab, chromedp.Evaluate[string](`[...document.querySelectorAll('#probe-status, #probe-progress, #probe .field-error')].map((e) => e.textContent).join(' | ')`)))
	}
	status := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#probe-status').textContent`))
	m := probeID.FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("the probe ended: %s", status)
	}
	return m[1], read(t, tab, chromedp.Evaluate[string](`document.querySelector('#probe-knee').dataset.knee`))
}

// simulator serves a fast simulated endpoint on 127.0.0.1. Two sequences
// run at a time, so a third and fourth in flight only wait and the knee
// shows within three steps.
func simulator(t *testing.T) string {
	t.Helper()
	return simulatorOf(t, fakeendpoint.Config{MaxNumSeqs: 2, TTFT: 5 * time.Millisecond, ITL: time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
}

// slowSimulator is simulator with requests of about 225 ms, long against
// the scheduling noise of a busy machine: a knee search finds its two
// slots in a few seconds.
func slowSimulator(t *testing.T) string {
	t.Helper()
	return simulatorOf(t, fakeendpoint.Config{MaxNumSeqs: 2, TTFT: 150 * time.Millisecond, ITL: 5 * time.Millisecond, ITLGrowth: fakeendpoint.NoGrowth})
}

func simulatorOf(t *testing.T, cfg fakeendpoint.Config) string {
	t.Helper()
	s, err := fakeendpoint.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := httptest.NewServer(s)
	t.Cleanup(endpoint.Close)
	return endpoint.URL + "/v1"
}

func TestUIEndToEnd(t *testing.T) {
	chromiumPath(t)
	cleanServeEnv(t)
	started := time.Now()
	srv := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tab := browser(t, ctx)

	text, _ := planner.Example(e2eExample)
	want, err := app.New(plan.New(plan.Options{})).Plan(context.Background(), testutil.Example(t, e2eExample))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}

	t.Run("loads an example and shows its plan", func(t *testing.T) {
		do(t, tab,
			chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(srv.url+"/"),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", e2eExample),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
			screenshot(t, "plan.png"),
		)
		got := read(t, tab, readClasses("#plan-body tbody[data-class]"))
		if len(got) != len(want.Classes) {
			t.Fatalf("the page shows %d classes, the engine gives %d: %+v", len(got), len(want.Classes), got)
		}
		for i, c := range want.Classes {
			if got[i].Name != c.Name || got[i].Pool != fmt.Sprint(c.Pool) || got[i].Binding != c.BindingConstraint {
				t.Errorf("class %d on the page: %+v; the engine: %s pool %d bound by %s", i, got[i], c.Name, c.Pool, c.BindingConstraint)
			}
		}
		// The check and the fit, and what the columns mean.
		shown := read(t, tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#plan-body tbody[data-class]')].map((row) =>
			row.querySelector('[data-field=fits]').textContent.trim() + ' ' + row.querySelector('[data-field=check]').textContent.trim())`))
		for i, c := range want.Classes {
			fit, holds := "no", "breaks"
			if c.Fitting() {
				fit = "yes"
			}
			if c.Check.Holds {
				holds = "holds"
			}
			if i >= len(shown) || !strings.HasPrefix(shown[i], fit) || !strings.HasSuffix(shown[i], holds) {
				t.Errorf("class %s shows %q; the API: fits %v, check holds %v", c.Name, shown, c.Fits, c.Check.Holds)
			}
		}
		text := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#plan-body').textContent`))
		for _, s := range []string{"Pool is a cap", "Min pool is the least pool", "req/s is the demand against", "Check: " + want.Check.Summary} {
			if !strings.Contains(text, s) {
				t.Errorf("the plan on the page lacks %q", s)
			}
		}
	})

	t.Run("the editor shows the whole example, long lines wrapped", func(t *testing.T) {
		type box struct {
			Lines, Spans                     int
			ScrollW, ClientW                 float64
			ScrollH, ClientH, GutterH, RowPx float64
			Tall                             int
		}
		measure := chromedp.Evaluate[box](`(() => {
			const a = document.querySelector('#scenario-text'), g = document.querySelector('#scenario-gutter');
			const spans = [...g.querySelectorAll('span')];
			return { lines: a.value.split('\n').length, spans: spans.length, scrollw: a.scrollWidth, clientw: a.clientWidth,
				scrollh: a.scrollHeight, clienth: a.clientHeight, gutterh: g.scrollHeight, rowpx: parseFloat(getComputedStyle(a).lineHeight),
				tall: spans.filter((s) => s.getBoundingClientRect().height > 19).length };
		})()`)
		// The example of the page: 35 lines, all in view, none scrolling
		// sideways.
		b := read(t, tab, measure)
		if b.Lines < 30 || b.ScrollH > b.ClientH+1 || b.ScrollW > b.ClientW+1 || b.Spans != b.Lines {
			t.Errorf("%s: %+v; want every line in view, none wider than the editor, a number per line", e2eExample, b)
		}
		// The example with the longest lines: they wrap, their numbers
		// stand as tall as their rows, and the numbers run as far as the
		// text does.
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", "measured-curve"),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
		)
		b = read(t, tab, measure)
		if b.ScrollW > b.ClientW+1 || b.Tall == 0 || b.Spans != b.Lines || b.GutterH < b.ScrollH-2 || b.GutterH > b.ScrollH+2 || b.ClientH < 30*b.RowPx {
			t.Errorf("measured-curve: %+v; want wrapped lines with tall numbers, the gutter as tall as the text, at least 30 rows in view", b)
		}
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", e2eExample),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
		)
	})

	t.Run("the page has its icon and nothing missing", func(t *testing.T) {
		href := read(t, tab, chromedp.Evaluate[string](`document.querySelector('link[rel=icon]').href`))
		icon := read(t, tab, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then((r) => r.status + ' ' + r.headers.get('Content-Type'))`, href), chromedp.EvalAwaitPromise))
		if icon != "200 image/svg+xml" {
			t.Errorf("the icon %s: %s", href, icon)
		}
		if strings.Contains(srv.errOut.String(), `"status":404`) {
			t.Errorf("the page asked for something the server does not have:\n%s", srv.errOut)
		}
	})

	t.Run("the example box says what the editor holds", func(t *testing.T) {
		type box struct{ Holds, Text string }
		describe := chromedp.Evaluate[box](`(() => { const d = document.querySelector('#example-description'); return { holds: d.dataset.holds, text: d.textContent }; })()`)
		wantDesc := read(t, tab, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('#example-select option[value=%q]').dataset.description`, e2eExample)))
		if got := read(t, tab, describe); got.Holds != "example" || got.Text != wantDesc || wantDesc == "" {
			t.Errorf("with %s loaded: %+v; want its description %q", e2eExample, got, wantDesc)
		}
		// A scenario pasted (an input event, as a paste fires) is not the
		// example any more.
		pasted, _ := planner.Example("chat")
		do(t, tab, script(fmt.Sprintf(`const a = document.querySelector('#scenario-text'); a.value = %q; a.dispatchEvent(new Event('input', { bubbles: true }));`, pasted)))
		if got := read(t, tab, describe); got.Holds != "own" || !strings.HasPrefix(got.Text, "The editor holds a scenario of your own. Load puts "+e2eExample+" in its place") {
			t.Errorf("after a paste: %+v", got)
		}
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
		)
		if got := read(t, tab, describe); got.Holds != "example" || got.Text != wantDesc {
			t.Errorf("after loading %s again: %+v", e2eExample, got)
		}
	})

	t.Run("a class that no pool fits shows no latency, not an unbounded one", func(t *testing.T) {
		chat, _ := planner.Example("chat")
		none := strings.NewReplacer("slo: {ttft_p95_ms: 1500, e2e_p95_ms: 12000}", "slo: {ttft_p95_ms: 100}").Replace(string(chat))
		defer do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
		)
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.SetValue(chromedp.CSS("#scenario-text"), none),
			chromedp.Click(chromedp.CSS("#plan-button")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
		)
		cells := read(t, tab, chromedp.Evaluate[[]string](`['pool', 'ttft', 'e2e'].map((f) => document.querySelector('#plan-body tbody[data-class=chat] [data-field=' + f + ']').textContent.trim())`))
		if cells[0] != "0" || cells[1] != "no pool" || cells[2] != "no pool" {
			t.Errorf("pool, TTFT p95, E2E p95 of a class with no pool: %q", cells)
		}
	})

	t.Run("what-if slider follows the API", func(t *testing.T) {
		const field = "/classes/0/slo/e2e_p95_ms"
		before := want.Classes[0].BindingConstraint
		do(t, tab,
			setSelect("#wi-field", field),
			waitFor(fmt.Sprintf(`document.querySelector('#whatif').dataset.status === 'ready' && document.querySelector('#whatif').dataset.path === %q`, field)),
			chromedp.Focus(chromedp.CSS("#wi-slider")),
		)
		// Lower the SLO with the arrow key until the first class's binding
		// constraint changes.
		var value string
		var readout []pageClass
		for range 30 {
			do(t, tab, chromedp.KeyEvent(kb.ArrowLeft))
			value = read(t, tab, chromedp.Evaluate[string](`document.querySelector('#whatif').dataset.value`))
			readout = read(t, tab, readClasses("#wi-readout tr[data-class]"))
			if len(readout) > 0 && readout[0].Binding != before {
				break
			}
		}
		if len(readout) == 0 || readout[0].Binding == before {
			t.Fatalf("the binding constraint never changed from %s; readout %+v at %s", before, readout, value)
		}
		do(t, tab, waitFor(fmt.Sprintf(`document.querySelector('#plan').dataset.status === 'whatif' && document.querySelector('#plan').dataset.value === %q`, value)))
		table := read(t, tab, readClasses("#plan-body tbody[data-class]"))

		var v float64
		if _, err := fmt.Sscan(value, &v); err != nil {
			t.Fatalf("slider value %q: %v", value, err)
		}
		var grid struct {
			Cells []plan.Cell `json:"cells"`
		}
		status := postJSON(t, srv.url+"/v1/what-if", map[string]any{
			"scenario":   doc,
			"variations": []map[string]any{{"path": field, "values": []float64{v}}},
		}, &grid)
		if status != http.StatusOK || len(grid.Cells) != 1 {
			t.Fatalf("what-if at %v: %d, %d cells", v, status, len(grid.Cells))
		}
		api := grid.Cells[0].Classes
		for name, shown := range map[string][]pageClass{"what-if readout": readout, "plan table": table} {
			if len(shown) != len(api) {
				t.Fatalf("%s: %d classes, the API %d", name, len(shown), len(api))
			}
			for i, c := range api {
				if shown[i].Name != c.Name || shown[i].Pool != fmt.Sprint(c.Pool) || shown[i].Binding != c.BindingConstraint {
					t.Errorf("%s at %s = %v: %+v; the API: %s pool %d bound by %s", name, field, v, shown[i], c.Name, c.Pool, c.BindingConstraint)
				}
			}
		}
		if markers := read(t, tab, chromedp.Evaluate[int](`document.querySelectorAll('#wi-chart .marker').length`)); markers == 0 {
			t.Error("the what-if chart marks no change of binding constraint")
		}
		do(t, tab, scrollTo("#whatif", "start"), screenshot(t, "whatif.png"))
	})

	t.Run("the what-if shows no class of the scenario before", func(t *testing.T) {
		// Hold the page's what-if requests: until the new grid comes, the
		// readout must show none of the previous example's classes.
		do(t, tab,
			script(`const fetchNow = window.fetch;
				window.heldWhatIf = [];
				window.fetch = (...args) => String(args[0]).includes('/v1/what-if')
					? new Promise((resolve) => window.heldWhatIf.push(() => resolve(fetchNow(...args))))
					: fetchNow(...args);
				window.releaseWhatIf = () => { window.fetch = fetchNow; window.heldWhatIf.forEach((go) => go()); };`),
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", "chat-and-batch"),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && window.heldWhatIf.length > 0`),
		)
		held := read(t, tab, readClasses("#wi-readout tr[data-class]"))
		lines := read(t, tab, chromedp.Evaluate[int](`document.querySelectorAll('#wi-chart path.line').length`))
		if len(held) != 0 || lines != 0 {
			t.Errorf("while the new grid is asked for, the what-if shows %+v and %d lines", held, lines)
		}
		do(t, tab,
			script(`window.releaseWhatIf();`),
			waitFor(`document.querySelector('#whatif').dataset.status === 'ready'`),
		)
		got := read(t, tab, readClasses("#wi-readout tr[data-class]"))
		if len(got) != 2 || got[0].Name != "chat" || got[1].Name != "enrich" {
			t.Errorf("the what-if of chat-and-batch shows %+v", got)
		}
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", e2eExample),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
		)
	})

	t.Run("simulate panel follows the API", func(t *testing.T) {
		// The backfill example without pacing: its start-up burst draws a
		// storm of 429s. The example selected before is restored at the end.
		const example = "backfill"
		btext, _ := planner.Example(example)
		bjs, err := yaml.YAMLToJSON(btext)
		if err != nil {
			t.Fatal(err)
		}
		var bdoc map[string]any
		if err := json.Unmarshal(bjs, &bdoc); err != nil {
			t.Fatal(err)
		}
		defer do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", e2eExample),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
		)
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			setSelect("#example-select", example),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
			scrollTo("#simulate", "start"),
			chromedp.SetValue(chromedp.CSS("#sim-duration"), "10"),
			chromedp.Click(chromedp.CSS("#sim-pacing")), // pacing off
			script(`document.querySelector('#simulate').dataset.status = 'waiting';`),
			chromedp.Click(chromedp.CSS("#sim-run")),
			waitFor(`document.querySelector('#simulate').dataset.status === 'done'`),
			screenshot(t, "simulate.png"),
		)
		type shown struct {
			Name        string  `json:"name"`
			RateLimited float64 `json:"rate_limited"`
			Throughput  float64 `json:"throughput"`
			Holds       string  `json:"holds"`
			Charts      int     `json:"charts"`
		}
		rows := read(t, tab, chromedp.Evaluate[[]shown](`[...document.querySelectorAll('#sim-table tr[data-class]')].map((row) => ({
			name: row.dataset.class,
			rate_limited: Number(row.querySelector('[data-field=rate-limited]').dataset.value),
			throughput: Number(row.querySelector('[data-field=throughput]').dataset.value),
			holds: row.querySelector('[data-field=holds]').dataset.value,
			charts: document.querySelectorAll('#sim-charts article[data-class="' + row.dataset.class + '"] svg').length,
		}))`))
		var sim simulate.Simulation
		status := postJSON(t, srv.url+"/v1/simulations", map[string]any{
			"scenario": bdoc, "duration_s": 600, "pacing": false, "aimd": false, "retry_after": true, "refill": "continuous",
		}, &sim)
		if status != http.StatusOK || len(rows) != len(sim.Classes) {
			t.Fatalf("the API answered %d with %d classes; the page shows %+v", status, len(sim.Classes), rows)
		}
		for i, c := range sim.Classes {
			r := rows[i]
			if r.Name != c.Name || r.RateLimited != float64(c.Simulated.RateLimited) || r.Throughput != c.Simulated.ThroughputRPS ||
				r.Holds != fmt.Sprint(c.Verdict.Holds) || r.Charts != 2 {
				t.Errorf("class %d on the page: %+v; the API: %s with %d 429s, %g req/s, holds %v", i, r, c.Name, c.Simulated.RateLimited, c.Simulated.ThroughputRPS, c.Verdict.Holds)
			}
		}
		if sim.Verdict.Holds || sim.Quotas[0].RateLimited == 0 {
			t.Errorf("without pacing the backfill example should draw 429s: %+v", sim.Verdict)
		}
	})

	t.Run("pasting a scenario resets the what-if to its value", func(t *testing.T) {
		// Move the what-if slider over the key's tpm away from the
		// scenario's value, then paste a scenario whose tpm is ten times
		// smaller: the page must show that scenario's plan, with the slider
		// at its tpm, not the previous slider value.
		const field = "/quotas/0/tpm"
		do(t, tab,
			setSelect("#wi-field", field),
			waitFor(fmt.Sprintf(`document.querySelector('#whatif').dataset.status === 'ready' && document.querySelector('#whatif').dataset.path === %q`, field)),
			chromedp.Focus(chromedp.CSS("#wi-slider")),
			chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight),
			waitFor(`document.querySelector('#plan').dataset.status === 'whatif'`),
		)
		if moved := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#whatif').dataset.value`)); moved == "2000000" {
			t.Fatal("the slider did not move off the scenario's tpm")
		}
		pasted := strings.Replace(string(text), "tpm: 2000000", "tpm: 200000", 1)
		if pasted == string(text) {
			t.Fatal("the example has no tpm: 2000000 to change")
		}
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.SetValue(chromedp.CSS("#scenario-text"), pasted),
			chromedp.Click(chromedp.CSS("#plan-button")),
			waitFor(fmt.Sprintf(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready' && document.querySelector('#whatif').dataset.path === %q`, field)),
		)
		pastedJSON, err := yaml.YAMLToJSON([]byte(pasted))
		if err != nil {
			t.Fatal(err)
		}
		var pastedDoc map[string]any
		if err := json.Unmarshal(pastedJSON, &pastedDoc); err != nil {
			t.Fatal(err)
		}
		var fromAPI plan.Plan
		if status := postJSON(t, srv.url+"/v1/plans", map[string]any{"scenario": pastedDoc}, &fromAPI); status != http.StatusOK {
			t.Fatalf("POST /v1/plans: %d", status)
		}
		table := read(t, tab, readClasses("#plan-body tbody[data-class]"))
		readout := read(t, tab, readClasses("#wi-readout tr[data-class]"))
		for name, shown := range map[string][]pageClass{"plan table": table, "what-if readout": readout} {
			if len(shown) != len(fromAPI.Classes) {
				t.Fatalf("%s: %d classes, POST /v1/plans %d", name, len(shown), len(fromAPI.Classes))
			}
			for i, c := range fromAPI.Classes {
				if shown[i].Name != c.Name || shown[i].Pool != fmt.Sprint(c.Pool) || shown[i].Binding != c.BindingConstraint {
					t.Errorf("%s after the paste: %+v; POST /v1/plans: %s pool %d bound by %s", name, shown[i], c.Name, c.Pool, c.BindingConstraint)
				}
			}
		}
		if fromAPI.Classes[0].Pool == want.Classes[0].Pool {
			t.Errorf("a tenth of the tpm planned the same pool %d: the check shows nothing", want.Classes[0].Pool)
		}
		control := read(t, tab, chromedp.Evaluate[[]string](`[document.querySelector('#whatif').dataset.value, document.querySelector('#wi-from').value, document.querySelector('#wi-to').value]`))
		if control[0] != "200000" || control[1] != "50000" || control[2] != "800000" {
			t.Errorf("the what-if control after the paste: value %s over %s to %s; want 200000 over 50000 to 800000", control[0], control[1], control[2])
		}
	})

	t.Run("an invalid scenario shows the field's error under the editor", func(t *testing.T) {
		bad := strings.Replace(string(text), "output_tokens: {p50: 150, p95: 400}", "output_tokens: {p50: 150, p95: 100}", 1)
		line := 1 + strings.Count(bad[:strings.Index(bad, "p95: 100}")], "\n")
		const path = "classes[0].output_tokens.p95"
		item := fmt.Sprintf(`#scenario-errors li[data-path=%q]`, path)
		do(t, tab,
			chromedp.SetValue(chromedp.CSS("#scenario-text"), bad),
			chromedp.Click(chromedp.CSS("#plan-button")),
			waitFor(fmt.Sprintf(`document.querySelector(%q) !== null`, item)),
			scrollTo("#scenario-errors", "end"),
			screenshot(t, "errors.png"),
		)
		message := read(t, tab, chromedp.Text(chromedp.CSS(item)))
		marked := read(t, tab, chromedp.Evaluate[[]int](`[...document.querySelectorAll('#scenario-gutter .marked')].map((s) => Number(s.dataset.line))`))
		if !strings.Contains(message, path) || !strings.Contains(message, ">= p50") || !strings.Contains(message, fmt.Sprintf("line %d", line)) {
			t.Errorf("error under the editor: %q; want the path, the API's message and line %d", message, line)
		}
		if len(marked) != 1 || marked[0] != line {
			t.Errorf("marked lines %v, want [%d]", marked, line)
		}
	})

	t.Run("a priced plan shows what it costs", func(t *testing.T) {
		load := func(name string) {
			do(t, tab,
				script(`document.querySelector('#plan').dataset.status = 'reloading';`),
				setSelect("#example-select", name),
				chromedp.Click(chromedp.CSS("#example-load")),
				waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
			)
		}
		load("priced")
		total := read(t, tab, chromedp.Evaluate[string](`(document.querySelector('li[data-field=cost]') || {}).textContent || ''`))
		key := read(t, tab, chromedp.Evaluate[string](`(document.querySelector('li[data-quota=payg]') || {}).textContent || ''`))
		if !strings.Contains(total, "1,951.20\u00a0USD a day") || !strings.Contains(key, "1,663.20\u00a0USD a day") || !strings.Contains(key, "saves 583.20 a day") {
			t.Errorf("the page's cost: %q and %q; want the plan's 1,951.20 and the key's 1,663.20 USD a day", total, key)
		}
		load(e2eExample)
	})

	hasProbes := postJSON(t, srv.url+"/v1/probes", map[string]any{}, nil) != http.StatusNotFound
	t.Run("probe view", func(t *testing.T) {
		if !hasProbes {
			t.Skip("this server has no probe endpoints")
		}
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
		)
		startProbe(t, tab, simulator(t), "1,2,4")
		_, knee := finishProbe(t, tab)
		do(t, tab, screenshot(t, "probe.png"))
		steps := read(t, tab, chromedp.Evaluate[int](`document.querySelectorAll('#probe-steps-table tr[data-concurrency]').length`))
		kneeLines := read(t, tab, chromedp.Evaluate[int](`document.querySelectorAll('#probe-charts .vline.knee').length`))
		if knee == "" || steps != 3 || kneeLines == 0 {
			t.Fatalf("knee %q, %d steps shown, %d knee lines", knee, steps, kneeLines)
		}
		if lower := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#probe-knee').dataset.kneeLowerBound`)); lower != "false" {
			t.Errorf("a knee measured below a failing step is shown as a lower bound (%q)", lower)
		}
		// At 1280 px the step table, with its percentiles and intervals,
		// needs no horizontal scroll.
		if wide := read(t, tab, chromedp.Evaluate[bool](`(() => { const w = document.querySelector('#probe-steps-table .table-wrap'); return w.scrollWidth > w.clientWidth + 1; })()`)); wide {
			t.Error("at 1280 px the probe's step table is wider than its panel")
		}
		if ci := read(t, tab, chromedp.Evaluate[int](`document.querySelectorAll('#probe-steps-table td .ci').length`)); ci == 0 {
			t.Error("the step table shows no intervals")
		}
		// Goodput equals throughput here (every answer within the
		// deadline): goodput is drawn over throughput, dashed, and
		// throughput under it wider, so that both show.
		type line struct {
			D, Dash string
			Width   float64
			Order   int
		}
		lines := read(t, tab, chromedp.Evaluate[map[string]line](`(() => {
			const paths = [...document.querySelectorAll('#probe-charts path.line')];
			const out = {};
			paths.forEach((p, i) => { const cs = getComputedStyle(p); out[p.dataset.series] = { d: p.getAttribute('d'), dash: cs.strokeDasharray, width: parseFloat(cs.strokeWidth), order: i }; });
			return out;
		})()`))
		g, th := lines["goodput"], lines["throughput"]
		if g.D == "" || th.D == "" || g.Order < th.Order || g.Dash == "none" || th.Width <= g.Width {
			t.Errorf("goodput %+v, throughput %+v: want goodput dashed over a wider throughput", g, th)
		}
		if g.D != th.D {
			t.Logf("goodput and throughput differ in this run: %s / %s", g.D, th.D)
		}

		// One click puts the measured latency into the scenario and plans it.
		do(t, tab,
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.Click(chromedp.CSS("#probe-use")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
		)
		edited := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#scenario-text').value`))
		var got struct {
			Latency scenario.Latency `json:"latency"`
		}
		if err := yaml.Unmarshal([]byte(edited), &got); err != nil {
			t.Fatalf("the editor holds no YAML after the latency was put in: %v\n%s", err, edited)
		}
		if got.Latency.Knee == nil || fmt.Sprint(*got.Latency.Knee) != knee || len(got.Latency.Curve) == 0 || got.Latency.TTFTMs != nil {
			t.Errorf("the scenario's latency after the click: %+v; want the probe's curve and knee %s", got.Latency, knee)
		}
		if !strings.Contains(edited, "# Three kinds of work") {
			t.Error("putting the latency in dropped the scenario's comments")
		}

		// A step size below the minimum is refused on the page, naming it.
		do(t, tab,
			chromedp.SetValue(chromedp.CSS("#probe-requests"), "16"),
			chromedp.Click(chromedp.CSS("#probe-start")),
			waitFor(`document.querySelector('#probe-requests-error').textContent !== ''`),
		)
		if msg := read(t, tab, chromedp.Text(chromedp.CSS("#probe-requests-error"))); !strings.Contains(msg, "max(40, 3c) = 40") {
			t.Errorf("a step size of 16: %q", msg)
		}

		// A ladder whose every step passes never reaches the knee: the
		// page says knee ≥ 2, a lower bound.
		do(t, tab, chromedp.SetValue(chromedp.CSS("#probe-requests"), ""))
		startProbe(t, tab, simulator(t), "1,2")
		boundID, bound := finishProbe(t, tab)
		lower := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#probe-knee').dataset.kneeLowerBound`))
		shown := read(t, tab, chromedp.Evaluate[string](`document.querySelector('#probe-knee').textContent`))
		if bound != "2" || lower != "true" || !strings.HasPrefix(shown, "≥ 2 in flight (a lower bound") {
			t.Errorf("a ladder 1, 2 on two slots: knee %q, lower bound %q, shown %q; want ≥ 2, a lower bound", bound, lower, shown)
		}

		// A knee search: the page shows its knee and the refined knee. (That
		// the search finds the slot count is the probe's tests' to check,
		// under a fake clock; here a busy machine may slow the service's
		// client, race-instrumented, enough to move it.)
		do(t, tab,
			chromedp.SetValue(chromedp.CSS("#probe-requests"), ""),
			chromedp.SetValue(chromedp.CSS("#probe-base-url"), slowSimulator(t)),
			chromedp.Click(chromedp.CSS("#probe-search")),
			chromedp.SetValue(chromedp.CSS("#probe-max-concurrency"), "4"),
			chromedp.Click(chromedp.CSS("#probe-start")),
		)
		searchID, searched := finishProbe(t, tab)
		refined := read(t, tab, chromedp.Evaluate[string](`(document.querySelector('#probe-knee-refined') || {dataset: {}}).dataset.knee || ''`))
		if searched == "" || refined == "" {
			t.Errorf("search: knee %q, refined %q; want both shown", searched, refined)
		}
		do(t, tab, chromedp.Click(chromedp.CSS("#probe-search")))

		// The compare view lists the ended probes with the two newest
		// ticked and the newest the baseline, and puts them side by side
		// in the list's order: the search, then the ladder whose knee is
		// a lower bound, which has no knee drift (the knee it bounds may
		// be the search's).
		do(t, tab,
			scrollTo("#compare", "start"),
			chromedp.Click(chromedp.CSS("#compare-refresh")),
			waitFor(`document.querySelectorAll('#compare-choices input.compare-pick:checked').length === 2`),
			chromedp.Click(chromedp.CSS("#compare-run")),
			waitFor(`document.querySelector('#compare').dataset.status === 'ready'`),
		)
		rows := read(t, tab, chromedp.Evaluate[[]map[string]string](`[...document.querySelectorAll('#compare-result tbody tr')].map((tr) => Object.fromEntries([...tr.cells].map((td) => [td.dataset.label, td.textContent])))`))
		if len(rows) != 2 || rows[0]["Probe"] != searchID || rows[0]["Knee drift"] != "baseline" ||
			rows[1]["Probe"] != boundID || rows[1]["Knee"] != "≥ 2" || rows[1]["Knee drift"] != "–" || !strings.HasSuffix(rows[1]["TTFT drift"], " %") {
			t.Errorf("the compare view of %s (baseline) and %s: %v; want the search as the baseline, then the ladder with knee ≥ 2, no knee drift and its TTFT drift", searchID, boundID, rows)
		}
	})

	t.Run("narrow window", func(t *testing.T) {
		do(t, tab,
			chromedp.EmulateViewport(400, 800),
			script(`document.querySelector('#plan').dataset.status = 'reloading';`),
			chromedp.Click(chromedp.CSS("#example-load")),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready'`),
			scrollTo("#plan", "start"),
			screenshot(t, "narrow.png"),
		)
		if read(t, tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
			t.Error("at 400 px the page is wider than the window")
		}
	})
	t.Run("asks for the token when the API wants one", func(t *testing.T) {
		const token = "ui-test-token-0123456789"
		t.Setenv("PLANNER_AUTH_TOKENS", token)
		secured := startServe(t, "serve", "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "planner.db"))
		do(t, tab,
			chromedp.Navigate(secured.url+"/"),
			waitFor(`document.querySelector('#token-dialog').open`),
			chromedp.SetValue(chromedp.CSS("#token-input"), token),
			chromedp.Click(chromedp.CSS(`#token-dialog button[value="save"]`)),
			waitFor(`document.querySelector('#plan').dataset.status === 'ready' && document.querySelector('#whatif').dataset.status === 'ready'`),
		)
		if got := read(t, tab, readClasses("#plan-body tbody[data-class]")); len(got) != len(want.Classes) {
			t.Errorf("with the token the page shows %d classes, want %d", len(got), len(want.Classes))
		}
		if !hasProbes {
			return
		}
		// With a token the page reads the events with fetch(), as an
		// EventSource cannot send the header; it falls back to polling the
		// probe only when that fails.
		startProbe(t, tab, simulator(t), "1,2")
		id, _ := finishProbe(t, tab)
		if polled := `"path":"/v1/probes/` + id + `"`; strings.Contains(secured.errOut.String(), polled) {
			t.Errorf("the page polled the probe instead of reading its events:\n%s", secured.errOut)
		}
		if !strings.Contains(secured.errOut.String(), `"path":"/v1/probes/`+id+`/events","status":200`) {
			t.Errorf("the page did not read the probe's events:\n%s", secured.errOut)
		}
	})
	t.Run("/docs tries requests on the server that serves it", func(t *testing.T) {
		do(t, tab,
			chromedp.Navigate(srv.url+"/docs#/operations/list-tiers"),
			waitFor(fmt.Sprintf(`document.body.innerHTML.includes(%q)`, srv.url+"/v1/tiers")),
			script(`[...document.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Send API Request').click();`),
			waitFor(`document.body.textContent.includes('200 OK')`),
		)
		if !strings.Contains(srv.errOut.String(), `"path":"/v1/tiers","status":200`) {
			t.Errorf("the docs page's request did not reach the server:\n%s", srv.errOut)
		}
	})

	t.Logf("browser test took %s", time.Since(started).Round(time.Millisecond))
}
