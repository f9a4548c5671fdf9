package importer

import (
	"net/http"
	"strings"

	"github.com/plannerdev/planner/internal/measure"
)

// classForStatus maps an HTTP status of a failed request to an error class
// of docs/probe.md (0 means no response arrived).
func classForStatus(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return measure.ErrRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return measure.ErrTimeout
	case status >= 500 && status <= 599:
		return measure.ErrServer
	case status >= 400 && status <= 499:
		return measure.ErrClient
	}
	return measure.ErrTransport
}

// classifyErrorText reads a failed request's status and class from the
// error text a tool stored: vLLM stores the HTTP reason phrase ("Too Many
// Requests") or an exception text; llmperf and GuideLLM store messages.
func classifyErrorText(text string) (status int, class string) {
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "429") || strings.Contains(t, "too many requests") || strings.Contains(t, "rate limit"):
		return http.StatusTooManyRequests, measure.ErrRateLimited
	case strings.Contains(t, "timeout") || strings.Contains(t, "timed out"):
		return 0, measure.ErrTimeout
	}
	for code := 400; code <= 599; code++ {
		if phrase := http.StatusText(code); phrase != "" && strings.Contains(t, strings.ToLower(phrase)) {
			return code, classForStatus(code)
		}
	}
	return 0, measure.ErrTransport
}
