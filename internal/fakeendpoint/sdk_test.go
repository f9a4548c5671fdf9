package fakeendpoint

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// sdkClient is the official OpenAI Go client pointed at the simulator.
func sdkClient(base string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("x"), option.WithMaxRetries(0))
}

func TestOpenAISDKStreaming(t *testing.T) {
	_, base := startSim(t, fast)
	client := sdkClient(base)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "sim-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Write a haiku about queues.")},
		MaxTokens:     openai.Int(12),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("ignore_eos", true))
	defer stream.Close()

	acc := openai.ChatCompletionAccumulator{}
	var deltas []string
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %s", chunk.RawJSON())
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			deltas = append(deltas, chunk.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(deltas) != 12 {
		t.Errorf("%d content deltas, want 12", len(deltas))
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %d choices", len(acc.Choices))
	}
	c := acc.Choices[0]
	if c.Message.Content != strings.Join(deltas, "") || c.Message.Role != "assistant" || c.FinishReason != "length" {
		t.Errorf("accumulated choice: role %q finish %q content %q", c.Message.Role, c.FinishReason, c.Message.Content)
	}
	if acc.Usage.CompletionTokens != 12 || acc.Usage.PromptTokens != 14 || acc.Usage.TotalTokens != 26 {
		t.Errorf("usage = %+v", acc.Usage)
	}
	if acc.Model != "sim-model" || !strings.HasPrefix(acc.ID, "chatcmpl-") {
		t.Errorf("model %q id %q", acc.Model, acc.ID)
	}
}

func TestOpenAISDKCompletionModelsAndErrors(t *testing.T) {
	_, base := startSim(t, fast)
	client := sdkClient(base)
	ctx := context.Background()

	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:               "sim-model",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hi")},
		MaxCompletionTokens: openai.Int(3),
	}, option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Usage.CompletionTokens != 3 {
		t.Errorf("completion = %s", resp.RawJSON())
	}

	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "sim-model" || page.Data[0].OwnedBy != "planner-sim" {
		t.Errorf("models = %s", page.RawJSON())
	}

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-unknown",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}
}

// TestOpenAISDKCompletions calls /v1/completions, vLLM bench serve's
// default endpoint, through the Go SDK: whole and streamed.
func TestOpenAISDKCompletions(t *testing.T) {
	_, base := startSim(t, fast)
	client := sdkClient(base)
	ctx := context.Background()
	params := openai.CompletionNewParams{
		Model:     "sim-model",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(4),
		N:         openai.Int(2),
	}
	resp, err := client.Completions.New(ctx, params, option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	if len(resp.Choices) != 2 || resp.Choices[1].Text != "the quick brown fox" || resp.Choices[1].FinishReason != "length" ||
		resp.Usage.CompletionTokens != 8 || resp.Usage.PromptTokens != 4 {
		t.Errorf("completion = %s", resp.RawJSON())
	}

	params.N = openai.Int(1)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Completions.NewStreaming(ctx, params, option.WithJSONSet("ignore_eos", true))
	defer stream.Close()
	var text strings.Builder
	var completionTokens int64
	for stream.Next() {
		c := stream.Current()
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
		}
		completionTokens += c.Usage.CompletionTokens
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != "the quick brown fox" || completionTokens != 4 {
		t.Errorf("streamed %q, %d completion tokens", text.String(), completionTokens)
	}
}
