package fakeendpoint

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// nodeSDKScript calls planner sim through the openai npm package's
// completions API, whole and streamed, and prints what it got as JSON.
const nodeSDKScript = `
const { OpenAI } = require("openai");
const client = new OpenAI({ baseURL: process.argv[2], apiKey: "x", maxRetries: 0 });
(async () => {
  const whole = await client.completions.create({
    model: "sim-model", prompt: "Once upon a time", max_tokens: 4, n: 2, ignore_eos: true,
  });
  let streamed = "", usage = null;
  const stream = await client.completions.create({
    model: "sim-model", prompt: "Once upon a time", max_tokens: 4, ignore_eos: true,
    stream: true, stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    for (const c of chunk.choices) streamed += c.text;
    if (chunk.usage) usage = chunk.usage;
  }
  console.log(JSON.stringify({ whole, streamed, usage }));
})().catch((e) => { console.error(String(e)); process.exit(1); });
`

// TestOpenAINodeSDKCompletions runs the openai npm package's completions
// call against the simulator. It needs node and the package: .ci/run
// installs a pinned version into a temporary folder and names it in
// PLANNER_NODE_MODULES (with PLANNER_REQUIRE_NODE_SDK=1, so that it cannot
// skip there); elsewhere it skips, saying what is missing.
func TestOpenAINodeSDKCompletions(t *testing.T) {
	skip := t.Skipf
	if os.Getenv("PLANNER_REQUIRE_NODE_SDK") == "1" {
		skip = t.Fatalf
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed: %v", err)
	}
	modules := os.Getenv("PLANNER_NODE_MODULES")
	if modules == "" {
		skip("PLANNER_NODE_MODULES names no node_modules folder with the openai package (.ci/run installs one)")
	}
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		skip("the openai npm package is not in %s: %v", modules, err)
	}
	_, base := startSim(t, fast)
	script := filepath.Join(t.TempDir(), "completions.cjs")
	if err := os.WriteFile(script, []byte(nodeSDKScript), 0o600); err != nil {
		t.Fatal(err)
	}
	// A bound on the child process, not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, base)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var got struct {
		Whole struct {
			Object  string `json:"object"`
			Choices []struct {
				Index        int    `json:"index"`
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage usage `json:"usage"`
		} `json:"whole"`
		Streamed string `json:"streamed"`
		Usage    *usage `json:"usage"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	w := got.Whole
	if w.Object != "text_completion" || len(w.Choices) != 2 || w.Choices[1].Index != 1 || w.Choices[1].Text != "the quick brown fox" ||
		w.Choices[1].FinishReason != "length" || w.Usage.CompletionTokens != 8 || w.Usage.PromptTokens != 4 {
		t.Errorf("whole completion = %+v", w)
	}
	if got.Streamed != "the quick brown fox" || got.Usage == nil || got.Usage.CompletionTokens != 4 {
		t.Errorf("streamed %q, usage %+v", got.Streamed, got.Usage)
	}
}
