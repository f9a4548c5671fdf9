package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/plannerdev/planner/internal/redact"
)

// preflightTimeout bounds the preflight request.
const preflightTimeout = 10 * time.Second

// maxPreflightBody bounds how much of the preflight answer is read.
const maxPreflightBody = 64 << 10

// MaxResponseHeaderBytes bounds the headers of any answer a probed
// endpoint gives, the preflight's and the probe's own: an endpoint may
// answer anything, and net/http would otherwise read 10 MiB of headers
// per answer (640 MiB with 64 streams open). Real endpoints send a few
// kilobytes, rate-limit headers included; an answer with more fails as a
// transport error.
const MaxResponseHeaderBytes = 64 << 10

// Preflight sends GET {base}/models to a checked target, through the
// guarded dialer and refusing redirects, with header (the API key, when
// one is sent). It fails with ErrRedirect when the target answers with a
// redirect, ErrUnauthorized on 401 or 403, and ErrUnreachable when no
// answer arrives. Any other answer passes: an endpoint need not list its
// models (404), and the probe itself reports 429s and 5xx.
func (g *Guard) Preflight(ctx context.Context, t Target, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	tr := &http.Transport{DialContext: g.DialContext, DisableCompression: true, MaxResponseHeaderBytes: MaxResponseHeaderBytes}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: RefuseRedirect}
	u := t.URL.JoinPath("models")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		// The url.Error would repeat the whole URL, query included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var re *RedirectError
		switch {
		case errors.As(err, &re), errors.Is(err, ErrForbidden):
			return fmt.Errorf("GET %s: %w", Display(u), err)
		}
		return fmt.Errorf("%w: GET %s: %s", ErrUnreachable, Display(u), Redact(err.Error(), header))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPreflightBody))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return fmt.Errorf("GET %s: %w", Display(u), &RedirectError{Status: resp.StatusCode})
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: GET %s answered %d", ErrUnauthorized, Display(u), resp.StatusCode)
	}
	return nil
}

// Redact removes from msg every value of header and the credential part of
// each ("sk-..." of "Bearer sk-..."), in any letter case, so that an error
// that quotes a request cannot carry its key.
func Redact(msg string, header http.Header) string {
	var values []string
	for _, vs := range header {
		values = append(values, vs...)
	}
	return redact.New(values...).String(msg)
}
