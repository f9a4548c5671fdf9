package probe

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fakeendpoint"
	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/optional"
)

// TestStreamServedModels: the model field of every chunk is read, the
// usage chunk's too; a stream naming two models keeps both, in order;
// escapes are decoded, an empty name is none, and a hostile name is cut.
func TestStreamServedModels(t *testing.T) {
	named := func(model, chunk string) string { return `{"model":"` + model + `",` + chunk[1:] }
	long := strings.Repeat("é", 300)
	for _, c := range []struct {
		name string
		body string
		want []string
	}{
		{"every chunk", sse("\n", named("gpt-4o-2024-08-06", roleChunk), named("gpt-4o-2024-08-06", contentChunk), named("gpt-4o-2024-08-06", usageChunk)),
			[]string{"gpt-4o-2024-08-06"}},
		{"the usage chunk alone", sse("\n", roleChunk, contentChunk, named("m", usageChunk)), []string{"m"}},
		{"two models", sse("\n", named("gpt-4o", contentChunk), named("gpt-4o-mini", contentChunk), named("gpt-4o", usageChunk)),
			[]string{"gpt-4o", "gpt-4o-mini"}},
		{"escapes", sse("\n", named(`org\/model`, contentChunk), named("org/model", usageChunk)), []string{"org/model"}},
		{"empty and absent", sse("\n", azureFiltered, contentChunk, usageChunk), []string{}},
		{"a model that is not a string", sse("\n", `{"model":7,`+contentChunk[1:], usageChunk), []string{}},
		{"a long name", sse("\n", named(long, contentChunk), named(long, usageChunk)), []string{strings.Repeat("é", maxServedName/2)}},
		{"at most four", sse("\n", named("a", contentChunk), named("b", contentChunk), named("c", contentChunk), named("d", contentChunk), named("e", contentChunk)),
			[]string{"a", "b", "c", "d"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := readStream(strings.NewReader(c.body+"data: [DONE]\n\n"), time.Now(), nil)
			if err != nil || !res.ok() {
				t.Fatalf("%v %+v", err, res)
			}
			if got := res.servedModels(); !slices.Equal(got, c.want) {
				t.Errorf("served %q, want %q", got, c.want)
			}
		})
	}
}

// servedSim is a fast simulator that requests name as model and that
// answers as served.
func servedSim(model, served string) fakeendpoint.Config {
	cfg := fastSim
	cfg.Model, cfg.ServedModel = model, served
	return cfg
}

// TestProbeSaysWhenAnotherModelAnswers: a probe of gpt-4o whose answers
// name gpt-4o-mini records the name on every row, judges it a switch,
// and says so in its warnings, its notes and requests.csv; answers that
// name a snapshot of the model asked raise nothing.
func TestProbeSaysWhenAnotherModelAnswers(t *testing.T) {
	bubble(t, servedSim("gpt-4o", "gpt-4o-mini"), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.Model, cfg.DialContext, cfg.Steps = "gpt-4o", dial, []int{1, 2}
		res := run(t, t.Context(), cfg, nil)
		ok := 0
		for _, rec := range res.Records {
			if rec.OK {
				ok++
			}
			if rec.ServedModel != "gpt-4o-mini" {
				t.Fatalf("row %+v", rec)
			}
		}
		s := res.Analysis.Served
		if s == nil || s.Check != measure.ServedSwitch || s.Asked != "gpt-4o" || len(s.Models) != 1 ||
			s.Models[0] != (measure.ServedCount{Name: "gpt-4o-mini", Answers: len(res.Records), Matches: false}) || ok != len(res.Records) {
			t.Fatalf("served %+v over %d rows", s, len(res.Records))
		}
		w := res.Warnings()
		if len(w) != 1 || !strings.Contains(w[0], "another model than the one asked (gpt-4o): gpt-4o-mini") || !slices.Contains(res.Analysis.Notes, w[0]) {
			t.Errorf("warnings %q, notes %q", w, res.Analysis.Notes)
		}
		var csv bytes.Buffer
		if err := measure.WriteCSV(&csv, res.Records); err != nil {
			t.Fatal(err)
		}
		back, err := measure.ReadCSV(&csv)
		if err != nil || back[0].ServedModel != "gpt-4o-mini" {
			t.Errorf("requests.csv: %v %+v", err, back)
		}
	})
	bubble(t, servedSim("gpt-4o", "gpt-4o-2024-08-06"), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.Model, cfg.DialContext, cfg.Steps = "gpt-4o", dial, []int{1}
		res := run(t, t.Context(), cfg, nil)
		if s := res.Analysis.Served; s.Check != measure.ServedMatch || s.Names() != "gpt-4o-2024-08-06" || len(res.Warnings()) != 0 {
			t.Errorf("a snapshot of the model asked: %+v, warnings %q", s, res.Warnings())
		}
	})
}

// TestDeploymentNamesAreInformation: the answers of an Azure-style
// deployment name the model behind it, which is said, not warned about.
func TestDeploymentNamesAreInformation(t *testing.T) {
	bubble(t, servedSim("prod-chat", "gpt-4o-2024-08-06"), func(t *testing.T, _ *fakeendpoint.Server, base string, dial dialFunc) {
		cfg := quick(base)
		cfg.Model, cfg.DialContext, cfg.Steps, cfg.APIKeyHeader = "prod-chat", dial, []int{1}, "api-key"
		res := run(t, t.Context(), cfg, nil)
		s := res.Analysis.Served
		if s.Check != measure.ServedDeployment || !s.Deployment || len(res.Warnings()) != 0 ||
			s.Sentence() != "served gpt-4o-2024-08-06, the model behind deployment prod-chat" {
			t.Errorf("served %+v (%s), warnings %q", s, s.Sentence(), res.Warnings())
		}
	})
}

func TestDeploymentTargets(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want bool
	}{
		{Config{BaseURL: "https://res.openai.azure.com/openai/deployments/prod-chat?api-version=2024-10-21"}, true},
		{Config{BaseURL: "https://res.openai.azure.com/openai/v1"}, true},
		{Config{BaseURL: "https://res.cognitiveservices.azure.com/openai/v1"}, true},
		{Config{BaseURL: "https://gateway.example/openai/deployments/prod-chat"}, true},
		{Config{BaseURL: "https://gateway.example/v1", APIKeyHeader: "api-key"}, true},
		{Config{BaseURL: "https://api.openai.com/v1"}, false},
		{Config{BaseURL: "http://127.0.0.1:8000/v1/deployments"}, false},
		{Config{BaseURL: "http://127.0.0.1:8000/v1", RequestsPerStep: optional.Of(50)}, false},
	} {
		if got := c.cfg.deployment(); got != c.want {
			t.Errorf("%s %q: deployment %v, want %v", c.cfg.BaseURL, c.cfg.APIKeyHeader, got, c.want)
		}
	}
}
