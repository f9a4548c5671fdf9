package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"

	"github.com/plannerdev/planner/internal/fieldpath"
	"github.com/plannerdev/planner/internal/yamldoc"
)

// Metrics are the metric names and labels that the alerting rules read:
// inputs, as teams' client metrics differ. The defaults are the
// OpenTelemetry GenAI semantic conventions' histograms as the
// OpenTelemetry Prometheus exporter names them (docs/exports.md has the
// mapping file, each key and its default).
type Metrics struct {
	// TTFT is a histogram of the time to the first token, in seconds:
	// the rules read its _bucket series.
	TTFT string `json:"ttft_histogram,omitempty" validate:"omitempty,histname"`
	// E2E is a histogram of a request's whole duration, in seconds.
	E2E string `json:"e2e_histogram,omitempty" validate:"omitempty,histname"`
	// TPOT is a histogram of each request's time per output token after
	// the first, in seconds.
	TPOT string `json:"tpot_histogram,omitempty" validate:"omitempty,histname"`
	// TaskE2E is a histogram of an agent task's duration, in seconds:
	// from its arrival to the end of its last tool run, one observation a
	// task. The GenAI conventions have none; the default is the name a
	// client's own histogram takes in their style.
	TaskE2E string `json:"task_histogram,omitempty" validate:"omitempty,histname"`
	// Requests is a counter of the requests sent, every attempt counted:
	// the 429 rate's denominator and the requests against rpm and rpd.
	Requests string `json:"requests_counter,omitempty" validate:"omitempty,metricname"`
	// RateLimited are the label matchers that, added to Requests', select
	// the requests answered 429.
	RateLimited string `json:"rate_limited_matchers,omitempty" validate:"omitempty,matchers"`
	// Tokens is a histogram of the tokens of each request: the rules read
	// its _sum series, split into input and output by TokenTypeLabel.
	Tokens string `json:"token_histogram,omitempty" validate:"omitempty,histname"`
	// TokenTypeLabel is the label that says whether tokens are input or
	// output; its values are "input" and "output".
	TokenTypeLabel string `json:"token_type_label,omitempty" validate:"omitempty,labelname"`
	// ClassLabel is the label whose value is the class's name
	// (class="chat"): the selector of a class without one in Classes.
	ClassLabel string `json:"class_label,omitempty" validate:"omitempty,classlabel"`
	// Classes are label matchers that select a class's series instead of
	// ClassLabel, by class name: {"chat": "service=\"chat-api\""}.
	Classes map[string]string `json:"classes,omitempty" validate:"max=32,dive,keys,min=1,max=64,endkeys,matchers"`
	// Window is the range over which rates and quantiles are taken.
	Window string `json:"window,omitempty" validate:"omitempty,promduration"`
	// For is how long a condition must hold before its alert fires.
	For string `json:"for,omitempty" validate:"omitempty,promduration"`
}

// DefaultMetrics are the names the rules read unless a mapping file says
// otherwise.
func DefaultMetrics() Metrics {
	return Metrics{
		TTFT:           "gen_ai_server_time_to_first_token_seconds",
		E2E:            "gen_ai_client_operation_duration_seconds",
		TPOT:           "gen_ai_server_time_per_output_token_seconds",
		TaskE2E:        "gen_ai_client_task_duration_seconds",
		Requests:       "gen_ai_client_operation_duration_seconds_count",
		RateLimited:    `error_type=~"429|rate_limit_exceeded|RateLimitError"`,
		Tokens:         "gen_ai_client_token_usage",
		TokenTypeLabel: "gen_ai_token_type",
		ClassLabel:     "class",
		Window:         "5m",
		For:            "10m",
	}
}

// withDefaults fills every key m leaves out with DefaultMetrics'.
func (m Metrics) withDefaults() Metrics {
	d := DefaultMetrics()
	for _, f := range []struct{ v, def *string }{
		{&m.TTFT, &d.TTFT}, {&m.E2E, &d.E2E}, {&m.TPOT, &d.TPOT}, {&m.TaskE2E, &d.TaskE2E}, {&m.Requests, &d.Requests}, {&m.RateLimited, &d.RateLimited},
		{&m.Tokens, &d.Tokens}, {&m.TokenTypeLabel, &d.TokenTypeLabel}, {&m.ClassLabel, &d.ClassLabel},
		{&m.Window, &d.Window}, {&m.For, &d.For},
	} {
		if *f.v == "" {
			*f.v = *f.def
		}
	}
	return m
}

// maxMetricsBytes bounds a mapping file.
const maxMetricsBytes = 1 << 20

// ParseMetrics reads a mapping file (YAML or JSON): every key optional,
// unknown keys refused, the keys it leaves out at their defaults. The
// error lists every problem by its key.
func ParseMetrics(data []byte) (Metrics, error) {
	if len(data) > maxMetricsBytes {
		return Metrics{}, fmt.Errorf("the metrics file is larger than %d KiB", maxMetricsBytes>>10)
	}
	js, err := yamldoc.ToJSON(data)
	if err != nil {
		return Metrics{}, fmt.Errorf("the metrics file: %w", err)
	}
	var m Metrics
	if !bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return Metrics{}, fmt.Errorf("the metrics file: %w", decodeProblem(err))
		}
	}
	var verrs validator.ValidationErrors
	if err := validate.Struct(m); errors.As(err, &verrs) {
		errs := make(fieldpath.Errors, len(verrs))
		for i, fe := range verrs {
			_, path, _ := strings.Cut(fe.Namespace(), ".")
			errs[i] = fieldpath.Error{Path: path, Message: ruleWords[fe.Tag()]}
			if errs[i].Message == "" {
				errs[i].Message = "fails the rule " + fe.Tag()
			}
		}
		return Metrics{}, fmt.Errorf("the metrics file: %w", errs)
	} else if err != nil {
		return Metrics{}, fmt.Errorf("the metrics file: %w", err)
	}
	return m.withDefaults(), nil
}

// decodeProblem words a decoding error of a mapping file by its key: a
// key that no setting takes, or a value of the wrong kind (every value is
// a string, classes a mapping of strings), rather than encoding/json's
// words about Go types.
func decodeProblem(err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fieldpath.Error{Path: strings.Trim(name, `"`), Message: "unknown key (the keys are " + strings.Join(metricsKeys(), ", ") + ")"}
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	got := map[string]string{"number": "a number", "bool": "true or false", "array": "a list", "object": "a mapping", "string": "a string"}[te.Value]
	if got == "" {
		got = te.Value
	}
	switch {
	case te.Field == "":
		return fieldpath.Error{Message: "must be a mapping of the keys of docs/exports.md, got " + got}
	case te.Field == "classes" || strings.HasPrefix(te.Field, "classes."):
		return fieldpath.Error{Path: "classes", Message: "must be a mapping of class names to label matchers (strings), got " + got}
	case te.Field == "window" || te.Field == "for":
		return fieldpath.Error{Path: te.Field, Message: "must be a Prometheus duration such as 5m, got " + got}
	}
	return fieldpath.Error{Path: te.Field, Message: "must be a string, got " + got}
}

// metricsKeys are the keys of a mapping file, in the order of Metrics.
func metricsKeys() []string {
	var keys []string
	for f := range reflect.TypeFor[Metrics]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// The Prometheus data model's names (prometheus.io/docs/concepts/data_model)
// and its durations, and a list of label matchers as a selector's braces
// hold them: name, an operator (=, !=, =~, !~) and a double-quoted value.
var (
	metricName  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	promDur     = regexp.MustCompile(`^(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$`)
	matcher     = `\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=~|!~|!=|=)\s*("(?:[^"\\\n]|\\.)*")\s*`
	matcherList = regexp.MustCompile(`^` + matcher + `(,` + matcher + `)*$`)
	oneMatcher  = regexp.MustCompile(matcher)
)

// validDuration reports whether s is a duration that Prometheus parses
// (model.ParseDuration) and that is more than 0: its units from the
// largest to the smallest, each at most once ("1h30m", not "30m1h"), and
// within the range of a time.Duration (about 292 years).
func validDuration(s string) bool {
	m := promDur.FindStringSubmatch(s)
	if s == "" || m == nil {
		return false
	}
	units := []time.Duration{365 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond}
	total := 0.0
	for i, u := range units {
		if m[i+1] != "" {
			n, err := strconv.ParseFloat(m[i+1], 64)
			if err != nil {
				return false
			}
			total += n * float64(u)
		}
	}
	return total > 0 && total < math.MaxInt64
}

// validMatchers reports whether s is a list of label matchers that
// Prometheus parses: each value a double-quoted string with PromQL's
// escapes (Go's: \q is none), and the value of =~ and !~ a regular
// expression (Go's RE2 syntax, which Prometheus anchors).
func validMatchers(s string) bool {
	if !matcherList.MatchString(s) {
		return false
	}
	for _, m := range oneMatcher.FindAllStringSubmatch(s, -1) {
		v, err := strconv.Unquote(m[2])
		if err != nil {
			return false
		}
		if m[1] == "=~" || m[1] == "!~" {
			if _, err := regexp.Compile("^(?:" + v + ")$"); err != nil {
				return false
			}
		}
	}
	return true
}

// ruleWords say what each rule of the mapping file asks.
var ruleWords = map[string]string{
	"metricname":   "must be a Prometheus metric name: letters, digits, '_' and ':', not starting with a digit",
	"histname":     "must be a histogram's own name, a Prometheus metric name without _bucket, _sum or _count, which the rules add to it",
	"classlabel":   "must be a Prometheus label name other than le, which a histogram's buckets carry: letters, digits and '_', not starting with a digit nor with '__'",
	"labelname":    "must be a Prometheus label name: letters, digits and '_', not starting with a digit nor with '__', which Prometheus reserves",
	"promduration": "must be a Prometheus duration greater than 0, such as 30s, 5m or 1h30m (units from the largest, each once)",
	"matchers":     `must be label matchers as a selector's braces hold them, such as error_type="429" or job="chat",env!="dev", each value a double-quoted PromQL string and, after =~ or !~, a regular expression`,
	"max":          "too long, or too many entries",
	"min":          "must not be empty",
}

// validate checks a mapping file's struct tags; it names fields by their
// keys in the file.
var validate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return name
	})
	for tag, ok := range map[string]func(string) bool{
		"metricname": metricName.MatchString,
		// Names beginning with __ are reserved for Prometheus's own use
		// (__name__ is the metric name: a matcher on it selects by name).
		"labelname": func(s string) bool { return labelName.MatchString(s) && !strings.HasPrefix(s, "__") },
		// The rules read a histogram's _bucket, _sum and _count series
		// by its own name: x_bucket would read x_bucket_bucket.
		"histname": func(s string) bool {
			return metricName.MatchString(s) && !strings.HasSuffix(s, "_bucket") && !strings.HasSuffix(s, "_sum") && !strings.HasSuffix(s, "_count")
		},
		// The quantile rules group a class's buckets by le and its label:
		// a class label named le would be the buckets' own.
		"classlabel": func(s string) bool { return labelName.MatchString(s) && !strings.HasPrefix(s, "__") && s != "le" },
		// Prometheus refuses a range or a for of 0 (0s, 0m0s), and
		// units out of order.
		"promduration": validDuration,
		"matchers":     validMatchers,
	} {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return ok(fl.Field().String()) }); err != nil {
			panic(err)
		}
	}
	return v
}()
