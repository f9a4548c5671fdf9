package store

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/plannerdev/planner/internal/measure"
	"github.com/plannerdev/planner/internal/redact"
)

// Status is the state of a probe run.
type Status string

// Probe run states. A run starts queued (or running), and ends in one of
// the other four, after which its status no longer changes.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	// StatusInterrupted marks a run whose process stopped (a crash, a kill,
	// a restart) before the run ended; Open sets it.
	StatusInterrupted Status = "interrupted"
)

// Valid reports whether st is one of the probe run states.
func (st Status) Valid() bool {
	switch st {
	case StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled, StatusInterrupted:
		return true
	}
	return false
}

// Ended reports whether a run in this state has ended for good.
func (st Status) Ended() bool {
	switch st {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusInterrupted:
		return true
	}
	return false
}

// ProbeRun is one probe run: its configuration, state, counts and, once
// analysed, its result.
type ProbeRun struct {
	// ID is assigned by CreateProbe.
	ID     string
	Status Status
	// Label is the caller's name for the run; it must not carry a
	// credential.
	Label string
	// BaseURL and Model name the endpoint; BaseURL must carry no
	// credential (user information, a key in the query).
	BaseURL string
	Model   string
	// Config is the run's configuration as a JSON document, without the
	// API key: a document with a credential field is refused.
	Config json.RawMessage
	// Error says why a run failed or stopped; bearer tokens and keys in it
	// are redacted before it is stored.
	Error string
	// CreatedAt is set by CreateProbe to the current time (UTC) when zero;
	// StartedAt when the run turns running; FinishedAt when it ends.
	CreatedAt, StartedAt, FinishedAt time.Time
	// Counts are the rows written so far.
	Counts Counts
	// Result is nil until SaveProbeResult.
	Result *ProbeResult
}

// Counts summarises the rows of a run, warm-up requests included.
type Counts struct {
	Records     int // every request row
	OK          int // successful responses
	RateLimited int // 429 answers, retried ones included
	Failed      int // requests that failed otherwise than by 429, cancelled ones included
}

// ProbeResult is the analysis of a run and how the run ended.
type ProbeResult struct {
	// Analysis holds the step summaries, knee, collapse, quota_limited and
	// USL fit.
	Analysis measure.Result
	// RateLimits is the quota the endpoint announced in its headers, as a
	// JSON document; nil when none was announced.
	RateLimits json.RawMessage
	// StopReason and StopDetail say why the run stopped.
	StopReason string
	StopDetail string
}

// CreateProbe stores a new probe run and returns its id. The status must be
// queued (the default) or running. ErrSecret means that the configuration
// or the base URL carries a credential; a *TooLargeError that the
// configuration is larger than the store takes. The service's own runs
// are created in their place instead (StartProbe).
func (s *Store) CreateProbe(ctx context.Context, p ProbeRun) (id string, err error) {
	defer s.classifyErr(&err)
	id, ins, err := s.newProbe(p)
	if err != nil {
		return "", fmt.Errorf("create probe: %w", err)
	}
	if err := s.write(ctx, func(t *tx) error { _, err := ins(ctx, t); return err }); err != nil {
		return "", fmt.Errorf("create probe: %w", err)
	}
	return id, nil
}

// newProbe checks a new run and returns its id and the insert that
// stores it, with its first status event, and returns its key.
func (s *Store) newProbe(p ProbeRun) (string, func(context.Context, *tx) (int64, error), error) {
	if p.Status == "" {
		p.Status = StatusQueued
	}
	if p.Status != StatusQueued && p.Status != StatusRunning {
		return "", nil, fmt.Errorf("a run starts queued or running, not %q", p.Status)
	}
	if err := checkText("base_url", p.BaseURL); err != nil {
		return "", nil, err
	}
	if err := checkText("label", p.Label); err != nil {
		return "", nil, err
	}
	config := p.Config
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	if err := checkDocument("config", config); err != nil {
		return "", nil, err
	}
	if err := s.checkSize("probe configuration", len(config)+len(p.Label)+len(p.BaseURL)+len(p.Model)); err != nil {
		return "", nil, err
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	started := p.StartedAt
	if p.Status == StatusRunning && started.IsZero() {
		started = s.now()
	}
	id := newID()
	return id, func(ctx context.Context, t *tx) (int64, error) {
		var seq int64
		err := t.QueryRowContext(ctx, `INSERT INTO probes (id, status, label, base_url, model, config, created_ns, started_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
			id, p.Status, p.Label, p.BaseURL, p.Model, string(config), created.UnixNano(), timeNs(started)).Scan(&seq)
		if err != nil {
			return 0, err
		}
		return seq, addStatus(ctx, t, seq, id, p.Status, s.now().UnixNano())
	}, nil
}

// SetProbeStatus moves a run to a new status and records errMsg (tokens
// redacted) as its error, with the status event. Turning running sets the
// start time; ending sets the finish time. A run that has ended cannot
// change (ErrFinished), and no run goes back to queued.
func (s *Store) SetProbeStatus(ctx context.Context, id string, status Status, errMsg string) (err error) {
	defer s.classifyErr(&err)
	if !status.Valid() || status == StatusQueued {
		return fmt.Errorf("set probe %s status: %q is not a status a run can move to", id, status)
	}
	now := s.now().UnixNano()
	err = s.write(ctx, func(t *tx) error {
		seq, cur, err := lockProbe(ctx, t, id)
		if err != nil {
			return err
		}
		if cur.Ended() {
			return fmt.Errorf("%w (%s)", ErrFinished, cur)
		}
		if status.Ended() {
			return endRun(ctx, t, seq, id, status, errMsg, now)
		}
		if _, err = t.ExecContext(ctx, `UPDATE probes SET status = ?, error = ?, started_ns = coalesce(started_ns, ?) WHERE seq = ?`,
			status, redact.Tokens(errMsg), now, seq); err != nil {
			return err
		}
		return addStatus(ctx, t, seq, id, status, now)
	})
	if err != nil {
		return fmt.Errorf("set probe %s status %s: %w", id, status, err)
	}
	return nil
}

// AppendRecords adds request rows to a run in one transaction: one insert
// per row and one update of the run's counts, cheap enough to call for
// every small batch while the run measures. ErrNotFound means no such run,
// ErrFinished that it has ended: its rows are complete.
func (s *Store) AppendRecords(ctx context.Context, probeID string, recs []measure.Record) (err error) {
	defer s.classifyErr(&err)
	if len(recs) == 0 {
		return nil
	}
	err = s.write(ctx, func(tx *tx) error {
		var seq, n int64
		var status Status
		err := tx.QueryRowContext(ctx, `SELECT seq, n_records, status FROM probes WHERE id = ?`+tx.db.d.forUpdate, probeID).Scan(&seq, &n, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if status.Ended() {
			return fmt.Errorf("%w (%s)", ErrFinished, status)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO probe_records (probe, step, idx, seq, start_s, ack_ms, ttft_ms, e2e_ms,
			output_tokens, input_tokens, output_estimated, status, error, attempts, retry_after_ms, ok, warmup,
			e2e_with_retries_ms, rate_rps, refine, served_model, conn, conn_wait_ms, dns_ms, connect_ms, tls_ms, ttfb_ms,
			cached_tokens, prefix_tokens, task, task_call)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var c Counts
		for i, r := range recs {
			if _, err := stmt.ExecContext(ctx, seq, r.Step, r.Index, n+int64(i), r.StartS, r.AckMs, r.TTFTMs, r.E2EMs,
				r.OutputTokens, r.InputTokens, r.OutputEstimated, r.Status, r.ErrorClass, r.Attempts, r.RetryAfterMs,
				r.OK, r.Warmup, r.E2EWithRetriesMs, r.RateRPS, r.Refine,
				r.ServedModel, r.Conn, r.ConnWaitMs, r.DNSMs, r.ConnectMs, r.TLSMs, r.TTFBMs,
				r.CachedTokens, r.PrefixTokens, r.Task, r.Call); err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			c.add(r)
		}
		_, err = tx.ExecContext(ctx, `UPDATE probes SET n_records = n_records + ?, n_ok = n_ok + ?,
			n_rate_limited = n_rate_limited + ?, n_failed = n_failed + ? WHERE seq = ?`,
			c.Records, c.OK, c.RateLimited, c.Failed, seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("append %d records to probe %s: %w", len(recs), probeID, err)
	}
	return nil
}

// add counts one row the way the analysis counts it: every 429 answer,
// retried ones included, and every request that failed otherwise.
func (c *Counts) add(r measure.Record) {
	c.Records++
	c.RateLimited += r.RateLimitedAnswers()
	switch {
	case r.OK:
		c.OK++
	case r.Status == 429 || r.ErrorClass == measure.ErrRateLimited:
	default:
		c.Failed++
	}
}

// SaveProbeResult stores the analysis of a run and why it stopped,
// replacing an earlier result. It does not change the run's status. A
// *TooLargeError means the result is larger than the store takes.
func (s *Store) SaveProbeResult(ctx context.Context, id string, r ProbeResult) (err error) {
	defer s.classifyErr(&err)
	analysisJSON, err := encodeResult(r.Analysis)
	if err != nil {
		return fmt.Errorf("save probe %s result: encode analysis: %w", id, err)
	}
	var limits sql.NullString
	if len(r.RateLimits) > 0 {
		if err := checkDocument("rate_limits", r.RateLimits); err != nil {
			return fmt.Errorf("save probe %s result: %w", id, err)
		}
		limits = sql.NullString{String: string(r.RateLimits), Valid: true}
	}
	detail := redact.Tokens(r.StopDetail)
	if err := s.checkSize("probe result", len(analysisJSON)+len(limits.String)+len(r.StopReason)+len(detail)); err != nil {
		return fmt.Errorf("save probe %s result: %w", id, err)
	}
	err = s.write(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE probes SET result = ?, rate_limits = ?, stop_reason = ?, stop_detail = ? WHERE id = ?`,
			string(analysisJSON), limits, r.StopReason, detail, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("probe %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("save probe %s result: %w", id, err)
	}
	return nil
}

const probeColumns = `seq, id, status, label, base_url, model, config, error, created_ns, started_ns, finished_ns,
	n_records, n_ok, n_rate_limited, n_failed, result, rate_limits, stop_reason, stop_detail`

// GetProbe returns the run with the given id, or ErrNotFound.
func (s *Store) GetProbe(ctx context.Context, id string) (_ ProbeRun, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return ProbeRun{}, fmt.Errorf("get probe %s: %w", id, err)
	}
	p, _, err := scanProbe(s.db.QueryRowContext(ctx, `SELECT `+probeColumns+` FROM probes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ProbeRun{}, fmt.Errorf("probe %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ProbeRun{}, fmt.Errorf("get probe %s: %w", id, err)
	}
	return p, nil
}

// ListProbes returns one page of probe runs, newest first, and the cursor
// of the next page ("" on the last page).
func (s *Store) ListProbes(ctx context.Context, opts ListOptions) (_ []ProbeRun, _ string, err error) {
	defer s.classifyErr(&err)
	if err := s.usable(ctx); err != nil {
		return nil, "", fmt.Errorf("list probes: %w", err)
	}
	after, err := parseCursor(opts.Cursor, cursorProbes)
	if err != nil {
		return nil, "", fmt.Errorf("list probes: %w", err)
	}
	limit := opts.limit()
	rows, err := s.db.QueryContext(ctx, `SELECT `+probeColumns+` FROM probes
		WHERE created_ns < ? OR (created_ns = ? AND seq < ?)
		ORDER BY created_ns DESC, seq DESC LIMIT ?`,
		after.createdNs, after.createdNs, after.seq, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list probes: %w", err)
	}
	defer rows.Close()
	var out []ProbeRun
	var keys []cursor
	for rows.Next() {
		p, key, err := scanProbe(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list probes: %w", err)
		}
		out = append(out, p)
		keys = append(keys, key)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list probes: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	return out[:limit], keys[limit-1].encode(cursorProbes), nil
}

func scanProbe(sc scanner) (ProbeRun, cursor, error) {
	var p ProbeRun
	var key cursor
	var config string
	var started, finished sql.NullInt64
	var result, limits sql.NullString
	var stopReason, stopDetail string
	if err := sc.Scan(&key.seq, &p.ID, &p.Status, &p.Label, &p.BaseURL, &p.Model, &config, &p.Error, &key.createdNs, &started, &finished,
		&p.Counts.Records, &p.Counts.OK, &p.Counts.RateLimited, &p.Counts.Failed, &result, &limits, &stopReason, &stopDetail); err != nil {
		return p, key, err
	}
	p.Config = json.RawMessage(config)
	p.CreatedAt = time.Unix(0, key.createdNs).UTC()
	p.StartedAt = nsTime(started)
	p.FinishedAt = nsTime(finished)
	if result.Valid {
		r := &ProbeResult{StopReason: stopReason, StopDetail: stopDetail}
		a, err := decodeResult([]byte(result.String))
		if err != nil {
			return p, key, fmt.Errorf("probe %s: decode result: %w", p.ID, err)
		}
		r.Analysis = a
		if limits.Valid {
			r.RateLimits = json.RawMessage(limits.String)
		}
		p.Result = r
	}
	return p, key, nil
}

// querier is a *db or a *tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// probeSeq returns the internal key of a run, or ErrNotFound.
func probeSeq(ctx context.Context, q querier, id string) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT seq FROM probes WHERE id = ?`, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return seq, err
}

// Records returns every row of a run, ordered by step, then index, then
// arrival. ErrNotFound means no such run.
func (s *Store) Records(ctx context.Context, probeID string) (_ []measure.Record, err error) {
	defer s.classifyErr(&err)
	var out []measure.Record
	err = s.eachRecord(ctx, probeID, func(r measure.Record) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("records of probe %s: %w", probeID, err)
	}
	return out, nil
}

// WriteRecordsCSV streams the rows of a run to w as requests.csv
// (measure.CSVHeader, then one row per request in the order of Records),
// without holding them all in memory. ErrNotFound, returned before anything
// is written, means no such run.
func (s *Store) WriteRecordsCSV(ctx context.Context, w io.Writer, probeID string) (err error) {
	defer s.classifyErr(&err)
	cw := csv.NewWriter(w)
	header := false
	err = s.eachRecord(ctx, probeID, func(r measure.Record) error {
		if !header {
			header = true
			if err := cw.Write(measure.CSVHeader); err != nil {
				return err
			}
		}
		return cw.Write(r.CSVRow())
	})
	if err == nil && !header {
		err = cw.Write(measure.CSVHeader)
	}
	if err != nil {
		return fmt.Errorf("requests.csv of probe %s: %w", probeID, err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("requests.csv of probe %s: %w", probeID, err)
	}
	return nil
}

// eachRecord calls fn for every row of a run in order. It looks the run up
// first, so that a missing run is ErrNotFound before fn is called. A
// request stored twice (a step, rate, refinement and idx again: an append
// retried after a write that went through) is read once, as first stored,
// since a run numbers each request of a step once: its rows and its
// requests.csv count each request once, as planner knee does a file's.
func (s *Store) eachRecord(ctx context.Context, probeID string, fn func(measure.Record) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	seq, err := probeSeq(ctx, s.db, probeID)
	if err != nil {
		return err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT step, idx, start_s, ack_ms, ttft_ms, e2e_ms, output_tokens, input_tokens,
		output_estimated, status, error, attempts, retry_after_ms, ok, warmup, e2e_with_retries_ms, rate_rps, refine,
		served_model, conn, conn_wait_ms, dns_ms, connect_ms, tls_ms, ttfb_ms, cached_tokens, prefix_tokens, task, task_call
		FROM probe_records WHERE probe = ? ORDER BY step, rate_rps, idx, seq`, seq)
	if err != nil {
		return err
	}
	defer rows.Close()
	// Rows of one step, rate and idx come together (the ORDER BY); seen
	// holds which refinement flags the current group has had.
	type group struct {
		step int
		rate float64
		idx  int
	}
	var cur group
	var seen [2]bool
	first := true
	for rows.Next() {
		var r measure.Record
		if err := rows.Scan(&r.Step, &r.Index, &r.StartS, &r.AckMs, &r.TTFTMs, &r.E2EMs, &r.OutputTokens, &r.InputTokens,
			&r.OutputEstimated, &r.Status, &r.ErrorClass, &r.Attempts, &r.RetryAfterMs, &r.OK, &r.Warmup,
			&r.E2EWithRetriesMs, &r.RateRPS, &r.Refine,
			&r.ServedModel, &r.Conn, &r.ConnWaitMs, &r.DNSMs, &r.ConnectMs, &r.TLSMs, &r.TTFBMs,
			&r.CachedTokens, &r.PrefixTokens, &r.Task, &r.Call); err != nil {
			return err
		}
		if g := (group{r.Step, r.RateRPS, r.Index}); first || g != cur {
			cur, seen, first = g, [2]bool{}, false
		}
		refine := 0
		if r.Refine {
			refine = 1
		}
		if seen[refine] {
			continue
		}
		seen[refine] = true
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
