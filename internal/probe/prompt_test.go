package probe

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestLoadPrompts(t *testing.T) {
	in := `{"prompt": "Hello"}

{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}
`
	ps, err := LoadPrompts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Text != "Hello" || len(ps[1].Messages) == 0 {
		t.Fatalf("prompts = %+v", ps)
	}
	m, err := ps[0].messages()
	if err != nil || string(m) != `[{"role":"user","content":"Hello"}]` {
		t.Errorf("messages of a text prompt = %s, %v", m, err)
	}
	bad := []struct{ name, in, want string }{
		{"empty file", "\n\n", "no prompts"},
		{"both", `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, "not both"},
		{"neither", `{}`, "needs"},
		{"messages not an array", `{"messages":{"role":"user"}}`, "must be an array"},
		{"empty messages", `{"messages":[]}`, "empty"},
		{"unknown field", `{"prompt":"a","temperature":1}`, "line 1"},
		{"not JSON", `prompt: a`, "line 1"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadPrompts(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestSyntheticText(t *testing.T) {
	syntheticText := func(runID string, seq, n int) string { return string(appendSyntheticText(nil, runID, seq, n)) }
	for _, seq := range []int{0, 9, 10, 12, 99, 100, 123456} {
		text := syntheticText("run", seq, 1)
		if want := "[run-" + strconv.Itoa(seq) + "] "; text != want || syntheticHeadLen("run", seq) != len(want) {
			t.Errorf("head of request %d: %q of %d bytes, want %q", seq, text, syntheticHeadLen("run", seq), want)
		}
	}
	for _, n := range []int{1, 10, 100, 5000} {
		s := syntheticText("run", 12, n)
		if !strings.HasPrefix(s, "[run-12] ") {
			t.Errorf("text of %d chars lacks its unique head: %.30q", n, s)
		}
		if want := max(n, len("[run-12] ")); len(s) != want {
			t.Errorf("len = %d, want %d", len(s), want)
		}
	}
	if syntheticText("run", 1, 100) == syntheticText("run", 2, 100) {
		t.Error("two requests got the same prompt: a prefix cache would hide their prefill")
	}
}

// TestCalibration checks that the synthetic length converges on the target
// against a tokenizer that counts ceil(bytes/4) plus a fixed template.
func TestCalibration(t *testing.T) {
	const target, template = 300, 11
	p := newPrompts(nil, target, "r")
	tokens := 0
	for seq := range calibrationRounds {
		planned, err := p.next(seq)
		if err != nil {
			t.Fatal(err)
		}
		in := planned
		messages := p.appendMessages(nil, in)
		if len(messages) != planned.size {
			t.Fatalf("request %d: %d bytes of messages, planned %d", seq, len(messages), planned.size)
		}
		var msgs []message
		if err := json.Unmarshal(messages, &msgs); err != nil || len(msgs) != 1 || len(msgs[0].Content) != in.chars {
			t.Fatalf("messages %s: %v", messages, err)
		}
		// Byte for byte what encoding/json writes of them.
		if want, _ := json.Marshal(msgs); string(messages) != string(want) {
			t.Fatalf("messages %s, encoding/json writes %s", messages, want)
		}
		tokens = (in.chars+3)/4 + template
		p.observe(in.chars, tokens)
	}
	if tokens < target-2 || tokens > target+2 {
		t.Errorf("after calibration a prompt has %d tokens, want %d ± 2", tokens, target)
	}
	frozen := p.length()
	if p.observe(10, 1000); p.length() != frozen {
		t.Error("calibration kept going after its rounds")
	}
}

// TestCalibrationBounded: whatever the usage counts say, one answer moves
// the synthetic length by at most maxCalibrationFactor, and the length
// stays within minCharsPerToken and maxCharsPerToken characters per
// target token.
func TestCalibrationBounded(t *testing.T) {
	const target = 1000
	for _, counts := range [][]int{{1, 7, 1, 1, 1}, {1_000_000_000, 1_000_000_000, 1_000_000_000, 1}, {1, 1_000_000, 1, 1_000_000}} {
		p := newPrompts(nil, target, "r")
		for _, n := range counts {
			before := p.length()
			p.observe(before, n)
			after := p.length()
			if after > maxCalibrationFactor*before || after*maxCalibrationFactor < before {
				t.Errorf("%v: an answer of %d tokens moved the length from %d to %d", counts, n, before, after)
			}
			if after > maxCharsPerToken*target || after < minCharsPerToken*target {
				t.Errorf("%v: %d characters for %d tokens", counts, after, target)
			}
		}
	}
}
